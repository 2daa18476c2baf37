package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// natsDebianPath is where Debian's nats-server package installs the
// server, off a user's PATH.
const natsDebianPath = "/usr/sbin/nats-server"

// natsStartTimeout bounds one start of nats-server, up to its ready line.
const natsStartTimeout = 30 * time.Second

// errNoNATSServer is the nats suite's reason to be skipped: the benchmark
// starts its own nats-server, as the tests do (internal/testenv.StartNATS),
// but never installs one.
var errNoNATSServer = errors.New("no nats-server on PATH or at " + natsDebianPath + " (apt-get install nats-server)")

// findNATSServer returns the nats-server program.
func findNATSServer() (string, error) {
	if bin, err := exec.LookPath("nats-server"); err == nil {
		return bin, nil
	}
	if _, err := os.Stat(natsDebianPath); err == nil {
		return natsDebianPath, nil
	}
	return "", errNoNATSServer
}

// natsServer is a nats-server with JetStream that the benchmark started on
// a loopback port with its own store directory (file storage, as
// COMPUTE_NATS_STORAGE's default).
type natsServer struct {
	URL     string
	Version string
	dir     string
	cmd     *exec.Cmd
	done    chan struct{}
}

// startNATSServer starts bin -js and waits until it accepts clients.
func startNATSServer(ctx context.Context, bin string) (*natsServer, error) {
	version, _ := exec.CommandContext(ctx, bin, "--version").Output()
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(addr, ":")
	dir, err := os.MkdirTemp("", "compute-bench-nats-")
	if err != nil {
		return nil, err
	}
	s := &natsServer{URL: "nats://" + addr, Version: strings.TrimSpace(string(version)), dir: dir, done: make(chan struct{})}
	s.cmd = exec.Command(bin, "-js", "-sd", dir, "-a", host, "-p", port)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start nats-server: %w", err)
	}
	ready := make(chan struct{})
	var log strings.Builder
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			if !signalled {
				log.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "Server is ready") {
					signalled = true
					close(ready)
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = s.cmd.Wait()
	}()
	select {
	case <-ready:
		return s, nil
	case <-s.done:
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("nats-server exited before it was ready:\n%s", log.String())
	case <-time.After(natsStartTimeout):
		s.stop()
		return nil, fmt.Errorf("nats-server not ready within %s:\n%s", natsStartTimeout, log.String())
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
}

// stop terminates the server and removes its store.
func (s *natsServer) stop() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	}
	_ = os.RemoveAll(s.dir)
}
