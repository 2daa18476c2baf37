package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `nodes get` shows the node's GPUs under it, each with its VERSION, the
// one `nodes quarantine`, `unquarantine` and `set-mode --if-match` take,
// and how many bookings it and its atoms have. The table showed the node
// alone, so an operator had to read the devices from -o yaml.
func TestNodesGetShowsItsGPUsVersions(t *testing.T) {
	t.Parallel()
	const booking = `{"deviceId":"GPU-1/mig-0","reservationId":"rsv_1","tenant":"acme","nodeId":"n1",` +
		`"from":"2030-01-01T00:00:00Z","to":"2030-01-01T01:00:00Z"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"n1","poolId":"p","cordoned":false,"taints":[],"liveness":"connected","noScheduleReasons":[],
			"conditions":[],"generation":0,"observedGeneration":0,"allocations":1,"version":4,
			"registeredAt":"2030-01-01T00:00:00Z","updatedAt":"2030-01-01T00:00:00Z","devices":[
			{"id":"GPU-0","kind":"gpu","model":"H100-80GB","mode":"exclusive","health":"healthy","quarantined":true,"version":3,"bookings":[]},
			{"id":"GPU-1","kind":"gpu","model":"A100-80GB","mode":"mig","health":"healthy","quarantined":false,"version":5,"bookings":[]},
			{"id":"GPU-1/mig-0","parentId":"GPU-1","kind":"mig","model":"A100-80GB","mode":"mig","profile":"1g.10gb",
			 "health":"healthy","quarantined":false,"version":5,"bookings":[%s]},
			{"id":"GPU-1/mig-1","parentId":"GPU-1","kind":"mig","model":"A100-80GB","mode":"mig","profile":"1g.10gb",
			 "health":"healthy","quarantined":false,"version":5,"bookings":[]}]}`, booking)
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_operator")
	out, errOut, code := inv.run("nodes", "get", "n1")
	require.Zero(t, code, errOut)
	node, gpus, ok := strings.Cut(out, "\n\n")
	require.True(t, ok, "the node, a blank line, its GPUs: %s", out)
	require.Len(t, strings.Split(strings.TrimSpace(node), "\n"), 2, out)
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSpace(gpus), "\n") {
		rows = append(rows, strings.Fields(l))
	}
	require.Equal(t, [][]string{
		{"GPU", "MODEL", "MODE", "HEALTH", "QUARANTINED", "BOOKINGS", "VERSION"},
		{"GPU-0", "H100-80GB", "exclusive", "healthy", "yes", "0", "3"},
		{"GPU-1", "A100-80GB", "mig", "healthy", "no", "1", "5"}, // its atoms' bookings
	}, rows, out)

	out, errOut, code = inv.run("nodes", "get", "n1", "-o", "json") // passed through as the server sent it
	require.Zero(t, code, errOut)
	require.Contains(t, out, `"version": 3`)
	require.NotContains(t, out, "QUARANTINED")
}
