package agent

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/wire"
)

// wan is a network namespace standing for the outside world: a veth pair
// from the node (198.18.77.1) to it (198.18.77.2), where a server answers
// "hello" on port 8099.
func wan(t *testing.T) {
	t.Helper()
	testenv.Program(t, "ip", "", "iproute2")
	testenv.Program(t, "bridge", "/usr/lib/cni/bridge", "containernetworking-plugins")
	testenv.Program(t, "python3", "", "python3")
	id := fmt.Sprint(os.Getpid() % 100000)
	ns, host, peer := "ctwan"+id, "vwh"+id, "vww"+id
	sh := func(args ...string) {
		t.Helper()
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
	}
	sh("ip", "netns", "add", ns)
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", host).Run()
		_ = exec.Command("ip", "netns", "delete", ns).Run()
	})
	sh("ip", "link", "add", host, "type", "veth", "peer", "name", peer)
	sh("ip", "link", "set", peer, "netns", ns)
	sh("ip", "addr", "add", "198.18.77.1/30", "dev", host)
	sh("ip", "link", "set", host, "up")
	sh("ip", "netns", "exec", ns, "ip", "addr", "add", "198.18.77.2/30", "dev", peer)
	sh("ip", "netns", "exec", ns, "ip", "link", "set", peer, "up")
	sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
	srv := exec.Command("ip", "netns", "exec", ns, "python3", "-c", `import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 8099)); s.listen()
while True:
    c, _ = s.accept(); c.sendall(b"hello\n"); c.close()`)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	require.Eventually(t, func() bool {
		return exec.Command("ip", "netns", "exec", ns, "python3", "-c",
			`import socket; socket.create_connection(("127.0.0.1", 8099), 1)`).Run() == nil
	}, 10*time.Second, 20*time.Millisecond)
}

// A bridge-mode allocation reaches the outside world, and nothing of the
// node: not its addresses (a server listening on all of them), not
// link-local metadata; its namespace goes with the release.
func TestContainerBridgeNetwork(t *testing.T) {
	sb := containerSandbox(t)
	require.NotNil(t, sb.net, "bridge networking set up")
	wan(t)
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	a := &wire.AssignPayload{AllocationID: "alc_bridge", VCPU: 1, MemoryMB: 256, Network: wire.NetworkBridge}
	sb.forgetAtEnd(t, a)
	probe := func(addr string) string {
		return fmt.Sprintf(`bash -c 'echo > /dev/tcp/%s/%d' 2>/dev/null && echo %s:reached || echo %s:refused`,
			addr, port, addr, addr)
	}
	out, code := sb.runScript(t, a, strings.Join([]string{
		`ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d. -f1-2`,
		`timeout 5 bash -c 'cat < /dev/tcp/198.18.77.2/8099'`,
		probe("198.18.77.1"), probe("10.87.0.1"), probe("127.0.0.1"),
		`timeout 5 bash -c 'echo > /dev/tcp/169.254.169.254/80' 2>/dev/null && echo metadata:reached || echo metadata:refused`,
	}, "\n"))
	require.Zero(t, code, out)
	require.Equal(t, "10.87\nhello\n198.18.77.1:refused\n10.87.0.1:refused\n127.0.0.1:refused\nmetadata:refused\n", out)
	require.Zero(t, accepted.Load(), "nothing reached the node's own listener")

	name := netnsName(sb.nodeID, a.AllocationID)
	require.FileExists(t, "/var/run/netns/"+name)
	require.NoError(t, sb.forget(context.Background(), a.AllocationID))
	require.NoFileExists(t, "/var/run/netns/"+name, "its namespace goes with it")
}

// A host-mode allocation (a pool with one tenant) shares the node's
// network: it reaches the node's loopback, which no other mode does.
func TestContainerHostNetwork(t *testing.T) {
	sb := containerSandbox(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	probe := fmt.Sprintf(`bash -c 'echo > /dev/tcp/127.0.0.1/%d' 2>/dev/null && echo reached || echo refused`, port)
	host := &wire.AssignPayload{AllocationID: "alc_host", VCPU: 1, MemoryMB: 256, Network: wire.NetworkHost}
	none := &wire.AssignPayload{AllocationID: "alc_none", VCPU: 1, MemoryMB: 256}
	sb.forgetAtEnd(t, host, none)
	out, _ := sb.runScript(t, host, probe)
	require.Equal(t, "reached\n", out)
	out, _ = sb.runScript(t, none, probe)
	require.Equal(t, "refused\n", out)
}

// A bridge network whose CNI teardown was cut short (the daemon killed in
// the middle: its NAT rules gone, its namespace left) is still released.
func TestBridgeTeardownAfterAPartialDelete(t *testing.T) {
	sb := containerSandbox(t)
	require.NotNil(t, sb.net)
	testenv.Program(t, "bridge", "/usr/lib/cni/bridge", "containernetworking-plugins")
	a := &wire.AssignPayload{AllocationID: "alc_halfdel", VCPU: 1, MemoryMB: 256, Network: wire.NetworkBridge}
	sb.forgetAtEnd(t, a)
	out, code := sb.runScript(t, a, "true")
	require.Zero(t, code, out)
	// The first delete's work, but for the namespace: what a daemon
	// killed between the two leaves.
	name := netnsName(sb.nodeID, a.AllocationID)
	require.NoError(t, sb.net.cni.DelNetworkList(context.Background(), sb.net.conf, &libcni.RuntimeConf{
		ContainerID: a.AllocationID, NetNS: "/var/run/netns/" + name, IfName: "eth0"}))
	require.FileExists(t, "/var/run/netns/"+name)
	require.NoError(t, sb.forget(context.Background(), a.AllocationID))
	require.NoFileExists(t, "/var/run/netns/"+name)
}
