package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A write's answer is shown with the columns it has: a site or pool create
// answers with a version, not the creation time a read shows, and a drain
// with the node's state, not its cordon. Shown with a read's columns, they
// printed "-" under CREATED and CORDONED.
func TestWriteAnswersShowTheirOwnColumns(t *testing.T) {
	t.Parallel()
	answers := map[string]string{
		"POST /v1/sites":           `{"id":"fra1","name":"Frankfurt 1","version":1,"position":"00"}`,
		"PATCH /v1/sites/fra1":     `{"id":"fra1","name":"Frankfurt","version":2,"position":"00"}`,
		"POST /v1/pools":           `{"id":"metal","siteId":"fra1","kind":"bare-metal","cpuRatio":1,"memoryRatio":1,"diskRatio":1,"workloadNetwork":"none","version":1,"position":"00"}`,
		"POST /v1/nodes/n1/drain":  `{"id":"n1","state":"connected","noScheduleReasons":["draining"],"version":4,"position":"00"}`,
		"POST /v1/nodes/n1/cordon": `{"id":"n1","cordoned":true,"state":"connected","noScheduleReasons":["cordoned"],"version":5,"position":"00"}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := answers[r.Method+" "+r.URL.Path]
		if !ok {
			http.Error(w, `{"error":{"code":"NOT_FOUND","message":"no"}}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_operator")

	for _, c := range []struct {
		args        []string
		header, row []string
	}{
		{[]string{"sites", "create", "fra1", "--name", "Frankfurt 1"}, []string{"ID", "NAME", "VERSION"}, []string{"fra1", "Frankfurt", "1", "1"}},
		{[]string{"sites", "update", "fra1", "--name", "Frankfurt"}, []string{"ID", "NAME", "VERSION"}, []string{"fra1", "Frankfurt", "2"}},
		{[]string{"pools", "create", "metal", "--site", "fra1"}, []string{"ID", "SITE", "KIND", "CPU-RATIO", "MEMORY-RATIO", "DISK-RATIO", "NETWORK", "VERSION"},
			[]string{"metal", "fra1", "bare-metal", "1", "1", "1", "none", "1"}},
		{[]string{"nodes", "drain", "n1"}, []string{"ID", "STATE", "NO-SCHEDULE", "VERSION"}, []string{"n1", "connected", "draining", "4"}},
		{[]string{"nodes", "cordon", "n1"}, []string{"ID", "CORDONED", "NO-SCHEDULE", "VERSION"}, []string{"n1", "yes", "cordoned", "5"}},
	} {
		out, errOut, code := inv.run(c.args...)
		require.Zero(t, code, "%v: %s", c.args, errOut)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2, "%v: %s", c.args, out)
		require.Equal(t, c.header, strings.Fields(lines[0]), c.args)
		require.Equal(t, c.row, strings.Fields(lines[1]), c.args)
	}
}
