package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/queries"
)

// POST /v1/pools takes the pool's workloadNetwork (none when left out) and
// the pool's reads show it; any other value is 400 INVALID_ARGUMENT and no
// pool is written.
func TestPoolWorkloadNetworkOverHTTP(t *testing.T) {
	t.Parallel()
	s := setupConfigReads(t)
	for _, c := range []struct{ id, asked, want string }{
		{"fra1-none", "", "none"},
		{"fra1-bridge", "bridge", "bridge"},
		{"fra1-host", "host", "host"},
		{"fra1-none2", "none", "none"},
	} {
		body := map[string]any{"id": c.id, "siteId": "fra1", "kind": "bare-metal"}
		if c.asked != "" {
			body["workloadNetwork"] = c.asked
		}
		var created map[string]any
		s.mustCall(t, http.StatusCreated, http.MethodPost, "/v1/pools", s.operator, body, &created)
		require.Equal(t, c.want, created["workloadNetwork"], c.id)
		var got queries.Pool
		s.mustCall(t, http.StatusOK, http.MethodGet, "/v1/pools/"+c.id, s.acme, nil, &got)
		require.Equal(t, c.want, got.WorkloadNetwork, c.id)
	}
	pools, _ := readAll[queries.Pool](t, s.testServer, "/v1/pools?site=fra1", s.operator, 10)
	modes := map[string]string{}
	for _, p := range pools {
		modes[p.ID] = p.WorkloadNetwork
	}
	require.Equal(t, map[string]string{"fra1-a": "none", "fra1-b": "none", "fra1-none": "none",
		"fra1-bridge": "bridge", "fra1-host": "host", "fra1-none2": "none"}, modes)

	for _, bad := range []any{"nat", "HOST", "", 1} {
		r := s.call(t, http.MethodPost, "/v1/pools", s.operator,
			map[string]any{"id": "fra1-bad", "siteId": "fra1", "kind": "bare-metal", "workloadNetwork": bad})
		require.Equal(t, http.StatusBadRequest, r.status, "%v: %s", bad, r.body)
		e := r.errorBody(t)
		require.Equal(t, core.CodeInvalidArgument, e.Code, "%v", bad)
		require.Contains(t, e.Message, "workloadNetwork", "%v", bad)
	}
	s.mustCall(t, http.StatusNotFound, http.MethodGet, "/v1/pools/fra1-bad", s.operator, nil, nil)
}
