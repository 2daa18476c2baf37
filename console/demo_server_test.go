package console_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The server side of the browser tests: a real `compute serve --demo`
// built from this tree, and API calls to set up what the pages show.

const (
	// startTimeout bounds building the binary and starting the server.
	startTimeout = 3 * time.Minute
	// streamLifetime is COMPUTE_STREAM_MAX_LIFETIME for the server: short,
	// so that every event stream is cut and resumed several times a run.
	streamLifetime = "5s"
)

// demo is a running `compute serve --demo` and the tokens it printed.
type demo struct {
	url, operator, tenant string
}

var demoTokens = regexp.MustCompile(`operator token \(tenant ops\):\s+(\S+)[\s\S]*tenant token\s+\(tenant acme\):\s+(\S+)`)

// startDemo builds cmd/compute and serves it with --demo on a loopback
// port, on a fresh database of DATABASE_URL's server (withpg sets it) or
// else on a private cluster of its own. Nodes stay schedulable without
// daemons, and webhooks may reach loopback. env adds settings (NAME=value).
func startDemo(t *testing.T, env ...string) *demo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "compute-ui-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o755) // a private cluster runs as the postgres user when root

	bin := filepath.Join(dir, "compute")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/bettercompute/compute/cmd/compute")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	addr := freeAddr(t)
	env = append(os.Environ(), append([]string{"COMPUTE_ADDR=" + addr, "COMPUTE_GATEWAY_ADDR=" + freeAddr(t),
		"COMPUTE_NODES_WITHOUT_DAEMONS=true", "COMPUTE_POLL_INTERVAL=200ms", "COMPUTE_LOG_LEVEL=warn",
		"COMPUTE_STREAM_MAX_LIFETIME=" + streamLifetime, "COMPUTE_WEBHOOK_ALLOW_PRIVATE=true",
		"COMPUTE_WEBHOOK_BREAKER_THRESHOLD=100"}, env...)...)
	if base := os.Getenv("DATABASE_URL"); base != "" {
		dbURL := freshDatabase(ctx, t, base)
		env = append(env, "DATABASE_URL="+dbURL, "COMPUTE_DATABASE_URL="+dbURL)
	} else {
		env = append(env, "DATABASE_URL=", "COMPUTE_DATABASE_URL=", "COMPUTE_PG_DIR="+filepath.Join(dir, "pg"))
	}

	logPath := filepath.Join(dir, "serve.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--demo")
	cmd.Dir, cmd.Env, cmd.Stderr = dir, env, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var printed strings.Builder
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			mu.Lock()
			printed.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
	}()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		// SIGTERM lets it stop a private cluster it started.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("compute serve log:\n%s", tail(b, 4000))
		}
	})

	d := &demo{url: "http://" + addr}
	err = poll(ctx, func() (bool, error) {
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			return false, fmt.Errorf("compute serve exited during start:\n%s", tail(b, 4000))
		default:
		}
		mu.Lock()
		m := demoTokens.FindStringSubmatch(printed.String())
		mu.Unlock()
		if m == nil {
			return false, nil
		}
		d.operator, d.tenant = m[1], m[2]
		resp, err := http.Get(d.url + "/healthz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("compute serve --demo did not come up: %v", err)
	}
	return d
}

// freshDatabase creates an empty database on the server of base and drops
// it when the test ends (after the server stopped: cleanups run last first).
func freshDatabase(ctx context.Context, t *testing.T, base string) string {
	t.Helper()
	name := fmt.Sprintf("console_ui_%d_%d", os.Getpid(), time.Now().UnixNano())
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to DATABASE_URL: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if c, err := pgx.Connect(ctx, base); err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// call sends an API request as token and decodes the answer, failing the
// test on any status but want.
func (d *demo) call(t *testing.T, token, method, path string, body any, want int, header ...string) map[string]any {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, d.url+path, r)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
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

// poll calls cond every 100 ms until it holds, fails, or ctx ends.
func poll(ctx context.Context, cond func() (bool, error)) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
