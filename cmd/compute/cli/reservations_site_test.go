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

// A reservation asked of a site (any of its pools) shows "site:" and the
// site under POOL in every reservations table: the API answers it with
// siteId and no poolId, and the tables showed "-", as if it had no place.
func TestSiteReservationShowsItsSite(t *testing.T) {
	t.Parallel()
	const rsv = `{"id":"rsv_1","tenant":"acme","state":"active","siteId":"s1","nodeId":"n1","deviceIds":["GPU-1"],
		"start":"2030-01-01T00:00:00Z","end":"2030-01-01T02:00:00Z","tolerations":[],"version":2,"conditions":[],
		"createdAt":"2030-01-01T00:00:00Z","updatedAt":"2030-01-01T00:00:00Z","position":"00000000000000010000000000000001",
		"priorityClass":"standard","priority":0,"preemptible":false,"gpus":1,"spec":{"gpu":{"count":1}},"charges":{},"allocation":null}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet && r.URL.Path == "/v1/reservations" {
			fmt.Fprintf(w, `{"items":[%s],"nextCursor":""}`, rsv)
			return
		}
		fmt.Fprint(w, rsv) // get, create, release
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_test")
	for _, args := range [][]string{
		{"reservations", "list"}, {"reservations", "get", "rsv_1"}, {"reservations", "release", "rsv_1"},
		{"reservations", "create", "--site", "s1", "--gpus", "1", "--start", "2030-01-01T00:00:00Z", "--duration", "2h"},
	} {
		out, errOut, code := inv.run(args...)
		require.Zero(t, code, "%v: %s", args, errOut)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2, out)
		header, cells := strings.Fields(lines[0]), strings.Fields(lines[1])
		i := slices.Index(header, "POOL")
		require.Equal(t, "site:s1", cells[i], "%v: %s", args, out) // before GPUS, whose cell holds a space
	}
}
