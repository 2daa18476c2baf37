package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
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
