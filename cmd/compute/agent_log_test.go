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
