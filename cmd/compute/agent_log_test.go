package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every line the node daemon logs names its node, `node` (docs/operations/
// observability.md, Logs), so that a fleet's collected logs can be searched
// by node. The line that says why a daemon exited, "compute agent failed"
// (here a join refused because its pool does not exist), was logged by the
// command's own logger without it, as was the warning of an OOM score the
// daemon could not lower: the one line an operator looks for after a node
// failed to come up named no node.
func TestAgentLogsNameTheNodeOnEveryLine(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"code":"NOT_FOUND","message":"pool pool-b not found"}}`)
	}))
	defer srv.Close()
	dir := scratchDir(t)
	bin := buildCompute(t, dir)
	tokenFile := filepath.Join(dir, "join-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("bcj_test"), 0o600))

	_, errOut, code := runCLI(t, dir, baseEnv(dir), "", bin, "agent", "--node", "node-8", "--pool", "pool-b",
		"--server", srv.URL, "--gateway", "ws://127.0.0.1:1", "--state-dir", filepath.Join(dir, "state"),
		"--join-token-file", tokenFile, "--fake-gpus", "none", "--workload-isolation=none")
	require.Equal(t, 1, code, errOut)

	failed := 0
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "not a JSON line: %s", line)
		require.Equal(t, "node-8", rec["node"], "a line without its node: %s", line)
		if rec["msg"] == "compute agent failed" {
			failed++
			require.Contains(t, rec["err"], "pool pool-b not found", line)
		}
	}
	require.Equal(t, 1, failed, "the failure is logged once:\n%s", errOut)
}

// The node daemon logs at COMPUTE_LOG_LEVEL like the server, and refuses a
// value that is no level as the server does (docs/configuration.md: another
// value stops the process at start): read as info, `COMPUTE_LOG_LEVEL=dbug`
// in agent.env hid the very lines it asked for, without a word. A level in
// any case is one.
func TestAgentRefusesAnUnknownLogLevel(t *testing.T) {
	t.Parallel()
	dir := scratchDir(t)
	bin := buildCompute(t, dir)
	args := []string{bin, "agent", "--node", "node-9", "--server", "http://127.0.0.1:1", "--gateway", "ws://127.0.0.1:1",
		"--state-dir", filepath.Join(dir, "state"), "--fake-gpus", "none", "--workload-isolation=none"}

	_, errOut, code := runCLI(t, dir, baseEnv(dir, "COMPUTE_LOG_LEVEL=dbug"), "", args...)
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, `COMPUTE_LOG_LEVEL must be debug, info, warn or error, not \"dbug\"`)
	require.NotContains(t, errOut, "join", "refused before it runs")

	// A level in any case is one: the daemon runs (and fails to join, with
	// no join token: exit 1).
	_, errOut, code = runCLI(t, dir, baseEnv(dir, "COMPUTE_LOG_LEVEL=WARN"), "", args...)
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, "no credential yet")
}
