package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

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

// Allow lists exactly the methods a path answers (RFC 9110 §15.5.6): each
// method it names is answered by the route (whatever the answer, never
// 405), and each it leaves out is 405 with the same Allow. The operations
// routes and / answer GET, HEAD and OPTIONS (the router's 204 with Allow)
// and list all three. The /v1 routes answer neither HEAD nor OPTIONS
// (docs/openapi.yaml says why; a CORS preflight from an allowed origin is
// the CORS middleware's, TestCORSPreflight), so their Allow names neither:
// a client that tried HEAD because Allow listed it would get 405. Every
// feature's routes are served, as main serves them, over a real listener.
func TestAllowListsExactlyTheMethodsAnswered(t *testing.T) {
	t.Parallel()
	s := newAPIServer(t, time.Second)
	srv := httptest.NewServer(s.e)
	t.Cleanup(srv.Close)
	send := func(method, path string) (int, http.Header, string) {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
			body = strings.NewReader(`{}`)
		}
		req, err := http.NewRequest(method, srv.URL+path, body)
		require.NoError(t, err)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+s.operator)
		res, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, res.Header, string(raw)
	}
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions}
	for path, want := range map[string][]string{
		"/v1/reservations":                  {"GET", "POST"},
		"/v1/tenants/acme/quotas":           {"GET"},
		"/v1/tenants/acme/quotas/gpu":       {"PUT"},
		"/v1/nodes/n1":                      {"GET"},
		"/v1/nodes/n1/cordon":               {"POST"},
		"/v1/webhook-endpoints/whe_1":       {"DELETE", "GET", "PATCH"},
		"/v1/whoami":                        {"GET"},
		"/v1/events/stream":                 {"GET"},
		"/healthz":                          {"GET", "HEAD", "OPTIONS"},
		"/openapi.yaml":                     {"GET", "HEAD", "OPTIONS"},
		"/":                                 {"GET", "HEAD", "OPTIONS"},
		"/v1/tenants/acme/priority-classes": {"GET", "PUT"},
	} {
		var answered, allow []string
		for _, m := range methods {
			if path == "/v1/events/stream" && m == http.MethodGet {
				answered = append(answered, m) // the stream's GET holds the connection; its tests read it
				continue
			}
			status, header, body := send(m, path)
			require.NotContains(t, body, "route not found", "%s %s", m, path)
			if status != http.StatusMethodNotAllowed {
				answered = append(answered, m)
				continue
			}
			got := strings.Split(header.Get("Allow"), ", ")
			slices.Sort(got)
			if allow != nil {
				require.Equal(t, allow, got, "%s %s: every 405 of a path has one Allow", m, path)
			}
			allow = got
		}
		slices.Sort(answered)
		slices.Sort(want)
		require.Equal(t, want, answered, "%s: the methods answered", path)
		require.Equal(t, want, allow, "%s: Allow", path)
	}
}
