package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// `reservations get` of a preempted reservation says by whom, from its
// Preempted condition.
func TestReservationsGetShowsPreemption(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"rsv_1","tenant":"globex","state":"preempted","poolId":"p","nodeId":"n1","deviceIds":["GPU-1"],
			"start":"2030-01-01T00:00:00Z","end":"2030-01-01T02:00:00Z","tolerations":[],"version":3,
			"conditions":[{"type":"Preempted","status":true,"reason":"PreemptedByHigherPriority",
			"message":"preempted by reservation rsv_2 (class prod, priority 1000 > -100)"}],
			"createdAt":"2030-01-01T00:00:00Z","updatedAt":"2030-01-01T00:00:00Z","position":"00000000000000010000000000000001",
			"priorityClass":"batch","priority":-100,"preemptible":true,"spec":{"gpu":{"count":1}},"charges":{},"allocation":null}`)
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_test")
	out, errOut, code := inv.run("reservations", "get", "rsv_1")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "WHY")
	require.Contains(t, out, "Preempted: preempted by reservation rsv_2 (class prod, priority 1000 > -100)")
}

// A server whose log does not have the CLI's last write to it (its database
// was restored to a point before it) refuses that position: the CLI forgets
// it, says so, and reads without it, instead of failing every read until
// its next write.
func TestReadsForgetAPositionTheServerRefuses(t *testing.T) {
	t.Parallel()
	const detail = `{"id":"rsv_1","tenant":"acme","state":"booked","poolId":"p","nodeId":"n1","deviceIds":["GPU-1"],
		"start":"2030-01-01T00:00:00Z","end":"2030-01-01T02:00:00Z","tolerations":[],"version":1,"conditions":[],
		"createdAt":"2030-01-01T00:00:00Z","updatedAt":"2030-01-01T00:00:00Z","position":"00000000000000010000000000000001",
		"priorityClass":"batch","priority":0,"preemptible":false,"spec":{"gpu":{"count":1}},"charges":{},"allocation":null}`
	var withPosition []string // the reads that carried a minPosition
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodGet { // the write: its answer carries a position the log will not have
			fmt.Fprint(w, strings.Replace(detail, `"version":1`, `"version":2`, 1))
			return
		}
		if p := r.URL.Query().Get("minPosition"); p != "" {
			mu.Lock()
			withPosition = append(withPosition, r.URL.Path)
			mu.Unlock()
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"code":"INVALID_ARGUMENT","message":"minPosition %s is no event of this log: a write of another installation's, or one lost when the database was restored to an earlier point"}}`, p)
			return
		}
		if r.URL.Path == "/v1/reservations" {
			fmt.Fprintf(w, `{"items":[%s]}`, detail)
			return
		}
		fmt.Fprint(w, detail)
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_test")

	for _, read := range [][]string{{"reservations", "get", "rsv_1"}, {"reservations", "list"}} {
		_, errOut, code := inv.run("reservations", "release", "rsv_1")
		require.Zero(t, code, errOut)
		out, errOut, code := inv.run(read...)
		require.Zero(t, code, errOut)
		require.Contains(t, out, "rsv_1")
		require.Contains(t, errOut, "does not have this CLI's last write")
		out, errOut, code = inv.run(read...) // forgotten: no refusal, no word
		require.Zero(t, code, errOut)
		require.Contains(t, out, "rsv_1")
		require.Empty(t, errOut)
	}
	mu.Lock()
	require.Equal(t, []string{"/v1/reservations/rsv_1", "/v1/reservations"}, withPosition)
	mu.Unlock()

	// A position given with --min-position is the user's: its refusal is theirs to see.
	_, _, code := inv.run("reservations", "list", "--min-position", "00000000000000010000000000000009")
	require.Equal(t, exitUsage, code)
}
