package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every object a command changes with --if-match shows its version in its
// table, under VERSION: reservations (extend, release, cancel), nodes
// (cordon, drain, taint, …) and webhook endpoints (update), as sites do;
// and pools, whose answer carries one too (pools list showed none while
// nodes list did). Without it an operator had to ask for -o json to learn
// the version.
func TestIfMatchObjectsShowTheirVersion(t *testing.T) {
	t.Parallel()
	const (
		reservation = `{"id":"rsv_1","tenant":"acme","state":"active","poolId":"p","nodeId":"n1","deviceIds":["GPU-1"],
			"start":"2030-01-01T00:00:00Z","end":"2030-01-01T02:00:00Z","tolerations":[],"version":7,"conditions":[],
			"createdAt":"2030-01-01T00:00:00Z","updatedAt":"2030-01-01T00:00:00Z","position":"00000000000000010000000000000001",
			"priorityClass":"standard","priority":0,"preemptible":false,"spec":{"gpu":{"count":1}},"charges":{},"allocation":null}`
		node = `{"id":"n1","poolId":"p","cordoned":false,"taints":[],"liveness":"connected","noScheduleReasons":[],
			"conditions":[],"generation":0,"observedGeneration":0,"allocations":0,"version":7,
			"registeredAt":"2030-01-01T00:00:00Z","updatedAt":"2030-01-01T00:00:00Z"}`
		webhook = `{"id":"we_1","tenant":"acme","url":"https://example.com/h","eventTypes":[],"description":"",
			"enabled":true,"version":7,"createdAt":"2030-01-01T00:00:00Z","updatedAt":"2030-01-01T00:00:00Z"}`
		pool = `{"id":"p","siteId":"s","kind":"bare-metal","cpuRatio":1,"memoryRatio":1,"diskRatio":1,
			"workloadNetwork":"none","version":7,"createdAt":"2030-01-01T00:00:00Z"}`
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		one := map[string]string{"reservations": reservation, "nodes": node, "webhook-endpoints": webhook, "pools": pool}
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/") // v1, kind[, id]
		if len(parts) == 2 {
			fmt.Fprintf(w, `{"items":[%s],"nextCursor":""}`, one[parts[1]])
			return
		}
		fmt.Fprint(w, one[parts[1]])
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_test")
	for _, args := range [][]string{
		{"reservations", "list"}, {"reservations", "get", "rsv_1"},
		{"nodes", "list"}, {"nodes", "get", "n1"},
		{"webhooks", "list"}, {"webhooks", "get", "we_1"},
		{"pools", "list"}, {"pools", "get", "p"},
	} {
		out, errOut, code := inv.run(args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2, out)
		header := strings.Fields(lines[0])
		i := slices.Index(header, "VERSION")
		require.NotEqual(t, -1, i, "%v: %s", args, lines[0])
		cells := strings.Fields(lines[1]) // counted from the end: a GPUS cell ("1 gpu") holds a space
		require.Equal(t, "7", cells[len(cells)-(len(header)-i)], "%v: %s", args, out)
	}
}
