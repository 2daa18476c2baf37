package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// startDeadline bounds how long a process may take to serve after
	// exec: migrations are already applied, so this is generous.
	startDeadline = 30 * time.Second
	// pollEvery is how often conditions are polled while waiting.
	pollEvery = 50 * time.Millisecond
	// servicePoll is COMPUTE_POLL_INTERVAL for the processes under test:
	// shorter than the default so that catch-up after a fault is quick.
	servicePoll = "200ms"
)

// server is one logical `compute serve`: a fixed HTTP and gateway address
// and environment, run as a sequence of processes (each SIGKILL ends one,
// Start begins the next). Keeping the address fixed lets the load
// generator retry against the same URL across restarts.
type server struct {
	name    string
	bin     string
	addr    string // 127.0.0.1:port of COMPUTE_ADDR
	env     []string
	roles   string
	logPath string

	cmd  *exec.Cmd
	done chan struct{} // closed when the current process has exited
	pid  int
}

// newServer prepares a server with free loopback ports; extraEnv may
// override anything (COMPUTE_PGBOUNCER, COMPUTE_LISTEN_URL, …).
func newServer(t *testing.T, name, dbURL, roles string, extraEnv ...string) *server {
	t.Helper()
	addr, gw := freeAddr(t), freeAddr(t)
	// API processes log every request at info; the others are quiet, and
	// their "running" line at info is how Start knows they are up.
	level := "info"
	if strings.Contains(roles, "api") {
		level = "warn"
	}
	s := &server{
		name: name, bin: computeBinary(t), addr: addr, roles: roles,
		logPath: filepath.Join(t.TempDir(), name+".log"),
		env: append([]string{
			"DATABASE_URL=" + dbURL, "COMPUTE_ADDR=" + addr, "COMPUTE_GATEWAY_ADDR=" + gw,
			"COMPUTE_GATEWAY_ID=" + name, "COMPUTE_ROLES=" + roles, "COMPUTE_WEBHOOK_ALLOW_PRIVATE=true",
			"COMPUTE_POLL_INTERVAL=" + servicePoll, "COMPUTE_LOG_LEVEL=" + level, "COMPUTE_MAX_CONNS=10",
			// The seeded fleets have no daemons (nodes that join, with
			// an agent, are judged as always).
			"COMPUTE_NODES_WITHOUT_DAEMONS=true", "COMPUTE_RATE_LIMIT=0", // the load measures throughput on one token
		}, extraEnv...),
	}
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			t.Logf("%s log tail:\n%s", s.name, tail(s.logPath, 3000))
		}
	})
	return s
}

// URL is the server's HTTP base URL.
func (s *server) URL() string { return "http://" + s.addr }

// Start runs a new process and waits until it serves: /healthz for API
// processes, the "running" log line for the others.
func (s *server) Start(ctx context.Context) error {
	if s.Alive() {
		return nil
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	logStart, _ := logf.Seek(0, 2)
	cmd := exec.Command(s.bin, "serve")
	cmd.Env = append(os.Environ(), s.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so a SIGKILL of the test never leaves it
	// holding ports: Cleanup kills it, and nothing else shares the group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.pid, s.done = cmd, cmd.Process.Pid, make(chan struct{})
	done := s.done
	go func() { _ = cmd.Wait(); close(done) }()
	return pollUntil(ctx, startDeadline, func() (bool, error) {
		if !s.Alive() {
			return false, fmt.Errorf("%s exited during start:\n%s", s.name, tailFrom(s.logPath, logStart))
		}
		if strings.Contains(s.roles, "api") {
			return httpOK(ctx, s.URL()+"/healthz"), nil
		}
		return strings.Contains(tailFrom(s.logPath, logStart), `"msg":"running"`), nil
	})
}

// Alive reports whether the current process is running.
func (s *server) Alive() bool {
	if s.done == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL (no shutdown hooks, no flush) and waits for the exit.
func (s *server) Kill() {
	if !s.Alive() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// OwnerPrefix is the prefix of the lease owner names this process uses
// (host-pid-random, see processOwner in cmd/compute).
func (s *server) OwnerPrefix() string {
	host, _ := os.Hostname()
	return host + "-" + strconv.Itoa(s.pid) + "-"
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func httpOK(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// pollUntil polls cond every pollEvery until it holds, fails, or the
// deadline passes: the harness never sleeps to wait for something.
func pollUntil(ctx context.Context, deadline time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("condition not met within %s: %w", deadline, ctx.Err())
		case <-tick.C:
		}
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func tailFrom(path string, from int64) string {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) < from {
		return ""
	}
	return string(bytes.TrimSpace(b[from:]))
}

// errStatus is a non-2xx answer, kept whole for the test log.
type errStatus struct {
	status int
	code   string // error.code of the body, e.g. QUOTA_EXCEEDED
	body   string
}

func (e errStatus) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.body) }

// codeOf is the API error code of err ("" for transport errors).
func codeOf(err error) string {
	var es errStatus
	if errors.As(err, &es) {
		return es.code
	}
	return ""
}

func statusOf(err error) int {
	var es errStatus
	if errors.As(err, &es) {
		return es.status
	}
	return 0
}
