package testenv

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// natsReady is the line nats-server logs once it accepts clients.
const natsReady = "Server is ready"

// natsDebianPath is where the Debian package nats-server installs it.
const natsDebianPath = "/usr/sbin/nats-server"

// natsStartTimeout bounds one start of the server, up to natsReady.
const natsStartTimeout = 30 * time.Second

// NATS is a nats-server with JetStream that the test started: its own
// port on loopback, its own store directory, stopped when the test ends.
// Kill and Start restart it on the same port and store, as a crashed
// server comes back.
type NATS struct {
	// URL is where clients connect (nats://127.0.0.1:<port>).
	URL string

	t    testing.TB
	bin  string
	args []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// StartNATS starts nats-server -js, found on PATH or where the Debian
// package nats-server puts it (installed when missing and possible; see
// Program), and waits until it accepts clients.
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil { // Debian's package puts it in /usr/sbin, off a user's PATH
		bin = Program(t, "nats-server", natsDebianPath, "nats-server")
	}
	port := freePort(t)
	s := &NATS{
		URL: fmt.Sprintf("nats://127.0.0.1:%d", port), t: t, bin: bin,
		args: []string{"-js", "-sd", t.TempDir(), "-a", "127.0.0.1", "-p", fmt.Sprint(port)},
	}
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// Start starts the server (again) and returns once it logged that it is
// ready; the test fails if it does not within natsStartTimeout.
func (s *NATS) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.bin, s.args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start nats-server: %v", err)
	}
	ready, done := make(chan struct{}), make(chan struct{})
	var log strings.Builder
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			if !signalled {
				log.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), natsReady) {
					signalled = true
					close(ready)
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
	}()
	select {
	case <-ready:
		s.cmd, s.done = cmd, done
	case <-done:
		s.t.Fatalf("nats-server %s exited before it was ready:\n%s", strings.Join(s.args, " "), log.String())
	case <-time.After(natsStartTimeout):
		_ = cmd.Process.Kill()
		<-done
		s.t.Fatalf("nats-server was not ready after %s:\n%s", natsStartTimeout, log.String())
	}
}

// Kill SIGKILLs the server, as a crash would, and waits until it exited.
// It does nothing when the server is not running.
func (s *NATS) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd, s.done = nil, nil
}
