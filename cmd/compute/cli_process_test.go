package main

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The command line as a user runs it: the binary built from this tree, in
// processes, with the environment a test gives it.

// startTimeout bounds building the binary and starting a server.
const startTimeout = 4 * time.Minute

// buildCompute builds cmd/compute into dir/bin/compute and returns its path.
func buildCompute(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin", "compute")
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/bettercompute/compute/cmd/compute").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// scratchDir is a directory the postgres OS user can enter (a private
// cluster runs as that user when the tests run as root), removed at the end.
func scratchDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "compute-cli-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// baseEnv is the environment of the processes a test starts: the test's
// own without any database or client setting, HOME in dir (so no saved
// context of the machine's user is read), plus extra.
func baseEnv(dir string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "DATABASE_URL", k == "HOME", k == "XDG_CONFIG_HOME", strings.HasPrefix(k, "COMPUTE_"):
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "HOME="+dir), extra...)
}

// proc is a long-running process of the binary (compute serve, compute
// events tail) whose output is collected as it comes.
type proc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	lines  chan string // stdout, line by line
	exited chan struct{}
}

// startProc starts argv in dir with env; it is stopped (SIGTERM, then
// SIGKILL) when the test ends, and its output logged if the test failed.
func startProc(t *testing.T, dir string, env []string, argv ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(argv[0], argv[1:]...), lines: make(chan string, 1024), exited: make(chan struct{})}
	p.cmd.Dir, p.cmd.Env = dir, env
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	require.NoError(t, p.cmd.Start())
	var copied sync.WaitGroup
	copied.Add(1)
	go func() {
		defer copied.Done()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.stdout.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
	}()
	go func() { copied.Wait(); _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.stop(t, syscall.SIGTERM)
		if t.Failed() {
			t.Logf("%s: stdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), lastBytes(p.out(), 4000), lastBytes(p.errOut(), 4000))
		}
	})
	return p
}

// stop signals the process and waits for it (SIGKILL after 30 s).
func (p *proc) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		t.Errorf("%s did not stop on %s", p.cmd.Path, sig)
	}
}

func (p *proc) out() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String()
}

func (p *proc) errOut() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// waitFor polls until cond holds, failing the test if the process exits
// or the deadline passes first.
func (p *proc) waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		select {
		case <-p.exited:
			t.Fatalf("waiting for %s: %s exited: %v\nstdout:\n%s\nstderr:\n%s", what, p.cmd.Path, p.cmd.ProcessState,
				lastBytes(p.out(), 4000), lastBytes(p.errOut(), 4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not after %s", what, timeout)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, not waiting for time to pass
	}
}

// lockedWriter serialises writes with the reader of the buffer.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// healthy reports whether the API at base answers /healthz.
func healthy(base string) bool {
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// runCLI runs the binary once and returns its stdout, stderr and exit code.
func runCLI(t *testing.T, dir string, env []string, stdin string, argv ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("%s: %v", strings.Join(argv, " "), err)
	}
	return out.String(), errOut.String(), code
}

// versionOutput is what --version prints.
var versionOutput = regexp.MustCompile(`^compute \S+\ncommit: \S.*\ngo: go\d+\.\d+\S* \w+/\w+\n$`)

func lastBytes(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
