package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// A method a path does not have is 405 METHOD_NOT_ALLOWED with Allow
// listing the methods it has (RFC 9110 §15.5.6 requires the header on a
// 405), under /v1 and on the operations routes alike; a path that exists
// under no method stays 404 NOT_FOUND without Allow. The refused request
// changes nothing. Before METHOD_NOT_ALLOWED existed every one of these
// 405s said NOT_FOUND, which a client could not tell from a missing object.
func TestMethodNotAllowedHasItsOwnCode(t *testing.T) {
	t.Parallel()
	f := setupQuotaFleet(t)
	before, ok := f.quotaOf(t, "gpu")
	require.True(t, ok)

	for _, c := range []struct {
		method, path, allow string
	}{
		{http.MethodDelete, "/v1/tenants/acme/quotas/gpu", "PUT"},
		{http.MethodGet, "/v1/tenants/acme/quotas/gpu", "PUT"},
		{http.MethodPost, "/v1/tenants/acme/quotas", "GET"},
		{http.MethodPut, "/v1/reservations", "POST"},
		{http.MethodDelete, "/v1/nodes/n1/cordon", "POST"},
	} {
		e := f.fails(t, http.StatusMethodNotAllowed, core.CodeMethodNotAllowed, c.method, c.path, f.operator, `{"max":0}`, nil)
		require.Equal(t, "method not allowed on this route", e.Message)
		r := f.send(t, c.method, c.path, f.operator, nil, nil)
		require.Equal(t, c.allow, r.header.Get("Allow"), "%s %s", c.method, c.path)
	}
	after, _ := f.quotaOf(t, "gpu")
	require.Equal(t, before, after, "a refused method changed the quota")

	// The operations routes are echo's own 405: the same code, and Allow
	// from the router.
	r := f.call(t, http.MethodDelete, "/healthz", "", nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.status, "body: %s", r.body)
	require.Equal(t, core.CodeMethodNotAllowed, r.errorBody(t).Code)
	require.Contains(t, r.header.Get("Allow"), "GET")
	require.Contains(t, r.header.Get("Allow"), "HEAD")

	// No such path under any method: 404 NOT_FOUND, no Allow.
	for _, p := range []string{"/v1/tenants/acme/quotaz", "/v1/nodes/n1/cordon/x", "/no/such/route"} {
		r := f.send(t, http.MethodDelete, p, f.operator, nil, nil)
		require.Equal(t, http.StatusNotFound, r.status, "%s: %s", p, r.body)
		require.Equal(t, core.CodeNotFound, r.errorBody(t).Code, p)
		require.Empty(t, r.header.Get("Allow"), p)
	}
}

// A GET with a body to a path without GET is the 405 (or, for no path at
// all, the 404), not a 400 for the body: the method or the path is what is
// wrong, and a client fixing the body would get nowhere. Before, the /v1
// group's body check ran first and answered 400 "unknown field".
func TestMethodNotAllowedBeforeTheBody(t *testing.T) {
	t.Parallel()
	f := setupQuotaFleet(t)
	r := f.send(t, http.MethodGet, "/v1/tenants/acme/quotas/gpu", f.operator, `{"max":3}`, nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.status, "body: %s", r.body)
	require.Equal(t, core.CodeMethodNotAllowed, r.errorBody(t).Code)
	require.Equal(t, "PUT", r.header.Get("Allow"))
	f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodGet, "/v1/no-such-thing", f.operator, `{"max":3}`, nil)
	// A GET route still refuses a body with a field in it.
	f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodGet, "/v1/tenants/acme/quotas", f.operator, `{"max":3}`, nil)
}
