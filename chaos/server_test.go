package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	cmd, err := startUnusedOwner(func() *exec.Cmd {
		cmd := exec.Command(s.bin, "serve")
		cmd.Env = append(os.Environ(), s.env...)
		cmd.Stdout, cmd.Stderr = logf, logf
		// Its own process group, so a SIGKILL of the test never leaves it
		// holding ports: Cleanup kills it, and nothing else shares the group.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return cmd
	})
	if err != nil {
		return err
	}
	s.cmd, s.pid, s.done = cmd, cmd.Process.Pid, make(chan struct{})
	done, owner := s.done, ownerPrefix(s.pid)
	// Registered before done closes: once Kill (or anything waiting on
	// done) returns, simClock already lets this process's leases lapse.
	go func() { _ = cmd.Wait(); exitedOwners.add(owner); close(done) }()
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
func (s *server) OwnerPrefix() string { return ownerPrefix(s.pid) }

func ownerPrefix(pid int) string {
	host, _ := os.Hostname()
	return host + "-" + strconv.Itoa(pid) + "-"
}

// exitedOwners holds the owner prefixes of every `compute serve` process of
// this test binary that has ended, however it ended: SIGKILLed by a test or
// by Cleanup, or a crash of its own. An ended process never renews a lease
// again, so simClock lets its leases lapse; no test has to remember to say
// that it killed something (one that forgot left a restarted gateway
// answering its daemons 503 for ever, its dead predecessor's lease
// extended at every step of the simulated clock).
var exitedOwners ownerSet

// ownerSet is a set of owner prefixes, safe for concurrent use.
type ownerSet struct {
	mu       sync.Mutex
	prefixes []string
}

func (o *ownerSet) add(prefix string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !slices.Contains(o.prefixes, prefix) {
		o.prefixes = append(o.prefixes, prefix)
	}
}

func (o *ownerSet) has(prefix string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Contains(o.prefixes, prefix)
}

func (o *ownerSet) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.prefixes)
}

// startUnusedOwner starts a command newCmd makes under a process id that no ended `compute
// serve` of this run had: the owner prefix (host-pid-) is how simClock
// tells a dead process's leases from a living one's, and process ids are
// reused (pid_max is 32768 on small machines). A process that drew a used
// id is killed at once, before it could take a lease that matters (any it
// took lapses with the dead one's), and another is started.
func startUnusedOwner(newCmd func() *exec.Cmd) (*exec.Cmd, error) {
	for range 10 {
		cmd := newCmd()
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		if !exitedOwners.has(ownerPrefix(cmd.Process.Pid)) {
			return cmd, nil
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	}
	return nil, errors.New("no unused process id in 10 starts")
}

// freeAddr returns a loopback address whose port is free now and lies
// below the kernel's ephemeral range. A port the kernel hands out for
// "127.0.0.1:0" comes from that range, which is also where every outgoing
// connection takes its local port: between this pick and the server's
// bind (or a restart's), a database connection of another process of the
// run could take it, and the server would exit with "address already in
// use" (seen under make test's -race load). Below the range, only a
// process that asks for the port by number can take it.
func freeAddr(t *testing.T) string {
	t.Helper()
	low := ephemeralPortLow()
	if low > fixedPortFloor+1000 {
		for range 200 {
			port := fixedPortFloor + rand.IntN(low-fixedPortFloor)
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				continue
			}
			addr := l.Addr().String()
			_ = l.Close()
			return addr
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// fixedPortFloor is the lowest port freeAddr picks: above the well-known
// and registered services a test machine may run.
const fixedPortFloor = 20000

// ephemeralPortLow is the first port of the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), 32768 when it cannot be read.
func ephemeralPortLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
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
