package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
)

// freePort is a loopback port free a moment ago, below the kernel's
// ephemeral range (32768 and up by default): a server can restart on it
// after a kill, and meanwhile no outgoing connection of another test can
// be given it.
func freePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(12000)
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			ln.Close()
			return port
		}
	}
	t.Fatal("no free loopback port between 20000 and 32000")
	return 0
}
