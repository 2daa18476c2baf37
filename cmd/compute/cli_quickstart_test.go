package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// quickStart is the README's "Quick start" section: the command lines of
// its first sh block (the first terminal) and of its second (the second
// terminal), comments dropped.
func quickStart(t *testing.T, readme string) (terminal1, terminal2 []string) {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## Quick start")
	require.True(t, ok, "README.md has no \"## Quick start\" section")
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1)
	require.Len(t, blocks, 2, "the quick start has one sh block per terminal")
	lines := func(block string) []string {
		var out []string
		for _, l := range strings.Split(block, "\n") {
			if i := strings.Index(l, " #"); i >= 0 {
				l = l[:i]
			}
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		return out
	}
	return lines(blocks[0][1]), lines(blocks[1][1])
}

// usingItExec is the README's "Using it" exec, the sh block that posts to
// /v1/commands: its two commands (continuation lines joined, comments
// dropped), the exec request and the read of its output.
func usingItExec(t *testing.T, readme string) (post, get string) {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## Using it")
	require.True(t, ok, "README.md has no \"## Using it\" section")
	section, _, _ = strings.Cut(section, "\n## ")
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		if !strings.Contains(block[1], "/v1/commands") {
			continue
		}
		var cmds []string
		for _, l := range strings.Split(strings.ReplaceAll(block[1], "\\\n", " "), "\n") {
			if i := strings.Index(l, " #"); i >= 0 {
				l = l[:i]
			}
			if l = strings.TrimSpace(l); l != "" {
				cmds = append(cmds, l)
			}
		}
		require.Len(t, cmds, 2, "the exec block: a request and a read of its output")
		return cmds[0], cmds[1]
	}
	t.Fatal(`README.md's "Using it" has no exec block (/v1/commands)`)
	return "", ""
}

var demoPrinted = regexp.MustCompile(`operator token \(tenant ops\):\s+(\S+)[\s\S]*tenant token\s+\(tenant acme\):\s+(\S+)`)

// The README's quick start works as written, in two terminals, on a fresh
// private PostgreSQL: the first terminal's `make run ARGS=--demo` (what make
// would run, with the binary built into a scratch directory that is the
// working directory of both terminals, and the server on a free loopback
// port instead of :8080), the second's lines with the tenant token the demo
// printed: the reservation books at once and its instance runs, through the
// node daemons the demo runs in the server's process; then "Using it"'s
// exec reads the devices the workload sees, and the instance is stopped.
// While the server runs, tokens are issued over the API, and --database
// says why it cannot share the private cluster.
func TestReadmeQuickStart(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	terminal1, terminal2 := quickStart(t, string(readme))
	require.Equal(t, []string{"make run ARGS=--demo"}, terminal1)

	// What `make run ARGS=--demo` runs.
	plan, err := exec.Command("make", "-C", root, "--no-print-directory", "-n", "run", "ARGS=--demo").Output()
	require.NoError(t, err)
	dir := scratchDir(t)
	addr := freeAddr(t)
	base := "http://" + addr
	env := baseEnv(dir, "COMPUTE_ADDR="+addr, "COMPUTE_GATEWAY_ADDR="+freeAddr(t))
	var serve *proc
	for _, line := range strings.Split(strings.TrimSpace(string(plan)), "\n") {
		switch {
		case strings.HasPrefix(line, "go build "):
			build := exec.Command("sh", "-c", strings.ReplaceAll(line, " bin/compute", " "+filepath.Join(dir, "bin", "compute")))
			build.Dir = root
			out, err := build.CombinedOutput()
			require.NoError(t, err, "%s: %s", line, out)
		case strings.HasPrefix(line, "exec ./bin/compute "):
			serve = startProc(t, dir, env, append([]string{filepath.Join(dir, "bin", "compute")},
				strings.Fields(strings.TrimPrefix(line, "exec ./bin/compute "))...)...)
		default:
			t.Fatalf("make run ARGS=--demo runs %q, which this test does not know", line)
		}
	}
	require.NotNil(t, serve, "make run starts no server")
	var operator, tenant string
	serve.waitFor(t, "the demo's tokens and /healthz", startTimeout, func() bool {
		m := demoPrinted.FindStringSubmatch(serve.out())
		if m != nil {
			operator, tenant = m[1], m[2]
		}
		return m != nil && healthy(base)
	})
	// The console the README's "The web console" section describes, at
	// the address the demo prints for it: a reader who moved the port
	// need not work out where it went.
	console := regexp.MustCompile(`(?m)^The web console.*\n\s+(\S+)$`).FindStringSubmatch(serve.out())
	require.NotNil(t, console, "the demo prints where its console is:\n%s", serve.out())
	require.Equal(t, base+"/ui/", console[1])
	page, err := http.Get(console[1])
	require.NoError(t, err)
	require.NoError(t, page.Body.Close())
	require.Equal(t, http.StatusOK, page.StatusCode)
	require.Contains(t, page.Header.Get("Content-Type"), "text/html")
	require.Contains(t, serve.out(), "Ctrl-C here stops the server")

	// The second terminal, line by line: the placeholders are the tenant
	// token the demo printed and the ids the lines before printed.
	env2 := baseEnv(dir)
	placeholders := map[string]string{"http://localhost:8080": base, "bc_…": tenant}
	fill := func(line string) string {
		for p, v := range placeholders {
			line = strings.ReplaceAll(line, p, v)
		}
		return line
	}
	run := func(line string) (string, error) {
		line = fill(line)
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir, cmd.Env = dir, env2
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%s: %w\nstdout: %s\nstderr: %s", line, err, out, ee.Stderr)
		}
		return string(out), err
	}
	firstColumn := regexp.MustCompile(`(?m)^((?:rsv|ins)_\S+)\s`)
	var checked []string
	for _, line := range terminal2 {
		if assign, ok := strings.CutPrefix(line, "export "); ok {
			for _, kv := range strings.Fields(assign) {
				require.Contains(t, kv, "=", line)
				env2 = append(env2, fill(kv))
			}
			continue
		}
		out, err := run(line)
		require.NoError(t, err)
		switch {
		case strings.HasSuffix(line, "--version"):
			require.Regexp(t, versionOutput, out)
		case strings.Contains(line, "reservations list -o json"):
			var page struct {
				Items      []json.RawMessage `json:"items"`
				NextCursor *string           `json:"nextCursor"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &page), out)
			require.NotNil(t, page.NextCursor, out)
		case strings.Contains(line, "reservations create"):
			// Booked at once (active from its start, now) on a node
			// whose daemon the demo runs: never pending.
			require.Regexp(t, `(?m)^rsv_\S+\s+(booked|active)\s+acme\s+demo-pool\s`, out)
			placeholders["rsv_…"] = firstColumn.FindStringSubmatch(out)[1]
		case strings.Contains(line, "reservations get"):
			// Active once the worker has run its activation; the line
			// is repeated until it says so.
			serve.waitFor(t, "the reservation active", startTimeout, func() bool {
				out, err = run(line)
				require.NoError(t, err)
				return regexp.MustCompile(`(?m)^rsv_\S+\s+active\s`).MatchString(out)
			})
		case strings.Contains(line, "instances create"):
			require.Regexp(t, `(?m)^ins_\S+\s+\S+\s+`+regexp.QuoteMeta(placeholders["rsv_…"])+`\s+demo-node-1\s`, out)
			placeholders["ins_…"] = firstColumn.FindStringSubmatch(out)[1]
		case strings.Contains(line, "instances get"):
			// The demo's daemon of demo-node-1 starts it; the line is
			// repeated until it says so.
			serve.waitFor(t, "the instance running", startTimeout, func() bool {
				out, err = run(line)
				require.NoError(t, err)
				require.NotRegexp(t, `(?m)^ins_\S+\s+failed\s`, out)
				return regexp.MustCompile(`(?m)^ins_\S+\s+running\s`).MatchString(out)
			})
		default:
			t.Fatalf("the quick start runs %q, which this test does not check", line)
		}
		checked = append(checked, line)
	}
	require.Len(t, checked, 6)

	// README.md's "Using it", in the same second terminal: what the
	// workload sees, through a member's exec on the reservation's node,
	// read back once it succeeded; then `instances stop`.
	post, get := usingItExec(t, string(readme))
	out, err := run(post)
	require.NoError(t, err)
	cmdID := regexp.MustCompile(`"id":"(cmd_[^"]+)"`).FindStringSubmatch(out)
	require.NotNil(t, cmdID, "the exec request prints its id, cmd_…: %s", out)
	placeholders["cmd_…"] = cmdID[1]
	serve.waitFor(t, "the exec succeeded", startTimeout, func() bool {
		out, err = run(get)
		require.NoError(t, err)
		require.NotContains(t, out, `"state":"failed"`)
		return strings.Contains(out, `"state":"succeeded"`)
	})
	require.Contains(t, out, `"output":"CUDA_VISIBLE_DEVICES=`)
	_, err = run("./bin/compute instances stop " + placeholders["ins_…"])
	require.NoError(t, err)

	// Released, the reservation's instance stops: no workload outlives the test.
	_, err = run("./bin/compute reservations release " + placeholders["rsv_…"])
	require.NoError(t, err)
	serve.waitFor(t, "the instance stopped", startTimeout, func() bool {
		out, err := run("./bin/compute instances get " + placeholders["ins_…"])
		require.NoError(t, err)
		return regexp.MustCompile(`(?m)^ins_\S+\s+stopped\s`).MatchString(out)
	})

	// Item 2 of issue 16: tokens while the server runs, over the API.
	bin := filepath.Join(dir, "bin", "compute")
	asOperator := baseEnv(dir, "COMPUTE_SERVER="+base, "COMPUTE_TOKEN="+operator)
	out, errOut, code := runCLI(t, dir, asOperator, "", bin, "tokens", "create", "--tenant", "acme", "--identity", "alice", "--role", "member")
	require.Equal(t, 0, code, errOut)
	secret := regexp.MustCompile(`(?m)^token:\s+(bc_\S+)$`).FindStringSubmatch(out)
	require.NotNil(t, secret, out)
	out, errOut, code = runCLI(t, dir, baseEnv(dir, "COMPUTE_SERVER="+base, "COMPUTE_TOKEN="+secret[1]), "", bin, "whoami")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `acme\s+alice\s+member`, out)
	// The private cluster is the server's: --database says so, and what to do.
	_, errOut, code = runCLI(t, dir, baseEnv(dir), "", bin, "tokens", "create", "--database", "--tenant", "acme", "--identity", "bob")
	require.Equal(t, 1, code, errOut) // exit 1, a failure (docs/cli.md)
	require.Contains(t, errOut, "in use")
	require.Contains(t, errOut, "without --database")

	// Ctrl-C in the first terminal stops the server and its cluster.
	serve.stop(t, syscall.SIGINT)
	require.True(t, serve.cmd.ProcessState.Success(), "compute serve exit: %v", serve.cmd.ProcessState)
}
