package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// serveStartDeadline bounds how long a `compute serve` may take to serve:
// the database is migrated before it starts, so this is generous.
const serveStartDeadline = 60 * time.Second

// serveProcess is one `compute serve` child process on a bench database:
// the measurements that need the HTTP API, SSE streams or the webhook
// dispatcher run the real binary, so its memory and throughput are the
// product's, not an in-process imitation sharing the benchmark's heap.
type serveProcess struct {
	addr         string // 127.0.0.1:port of COMPUTE_ADDR
	roles        string
	metricsToken string // COMPUTE_METRICS_TOKEN: /metrics on the API listener
	cmd          *exec.Cmd
	log          *lockedWriter // stdout+stderr, for the error of a failed start
	done         chan struct{}
}

// startServe runs `binary serve` against dbURL with the given roles
// (COMPUTE_ROLES) and waits until it serves: /healthz for a process with
// the api role, its "running" log line otherwise. extraEnv may override
// any setting (COMPUTE_POLL_INTERVAL, COMPUTE_MAX_CONNS, …).
func startServe(ctx context.Context, binary, dbURL, roles string, extraEnv ...string) (*serveProcess, error) {
	if binary == "" {
		return nil, errors.New("no compute binary to run (Config.Binary is empty)")
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	gw, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	p := &serveProcess{addr: addr, roles: roles, metricsToken: rand.Text(), log: &lockedWriter{buf: &bytes.Buffer{}}, done: make(chan struct{})}
	p.cmd = exec.Command(binary, "serve")
	// An API process would log every request at info; the others are
	// quiet, and their "running" line at info is how waitReady knows.
	level := "info"
	if strings.Contains(roles, "api") {
		level = "warn"
	}
	p.cmd.Env = append(os.Environ(),
		"DATABASE_URL="+dbURL, "COMPUTE_ADDR="+addr, "COMPUTE_GATEWAY_ADDR="+gw,
		"COMPUTE_ROLES="+roles, "COMPUTE_LOG_LEVEL="+level, "COMPUTE_WEBHOOK_ALLOW_PRIVATE=true",
		"COMPUTE_METRICS_TOKEN="+p.metricsToken, "COMPUTE_RATE_LIMIT=0") // the load measures throughput on one token
	p.cmd.Env = append(p.cmd.Env, extraEnv...)
	w := p.log
	p.cmd.Stdout, p.cmd.Stderr = w, w
	// Its own process group: an interrupted benchmark's cleanup kills it,
	// and nothing else shares the group.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start compute serve: %w", err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	if err := p.waitReady(ctx, w); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *serveProcess) waitReady(ctx context.Context, w *lockedWriter) error {
	ctx, cancel := context.WithTimeout(ctx, serveStartDeadline)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return fmt.Errorf("compute serve (%s) exited during start:\n%s", p.roles, w.String())
		case <-ctx.Done():
			return fmt.Errorf("compute serve (%s) not ready within %s:\n%s", p.roles, serveStartDeadline, w.String())
		case <-tick.C:
		}
		if strings.Contains(p.roles, "api") {
			if resp, err := http.Get(p.URL() + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
		} else if strings.Contains(w.String(), `"msg":"running"`) {
			return nil
		}
	}
}

// URL is the process's HTTP base URL.
func (p *serveProcess) URL() string { return "http://" + p.addr }

// Pid is the child's process id.
func (p *serveProcess) Pid() int { return p.cmd.Process.Pid }

// stop asks for a graceful shutdown (SIGTERM) and kills the process if it
// has not exited within 15 s.
func (p *serveProcess) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// rssBytes is the child's resident set size (VmRSS of /proc/<pid>/status).
func (p *serveProcess) rssBytes() (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmRSS %q: %w", rest, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// metric reads one unlabelled sample (e.g. go_memstats_heap_inuse_bytes,
// go_goroutines) from the process's /metrics.
func (p *serveProcess) metric(ctx context.Context, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+p.metricsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(rest), 64)
		}
	}
	return 0, fmt.Errorf("metric %s not in /metrics", name)
}

// freeLoopbackAddr picks a free port on 127.0.0.1 (loopback only).
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// lockedWriter is the child's output, written by exec's copying goroutine
// and read by waitReady.
type lockedWriter struct {
	mu  sync.Mutex
	buf *bytes.Buffer
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
