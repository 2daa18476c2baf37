package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/docs"
)

// ignoredInputFleet is what the sweeps below aim at: one node, tenant
// acme's objects (xtMakeTenant), an operator and a join token for the
// node. Every route's path names one of these, so that a route that
// ignored what it was sent would act (2xx) rather than answer 404.
type ignoredInputFleet struct {
	s          *apiServer
	acme       xtTenant
	joinToken  string // its id
	joinSecret string // its secret, for the join route
	now        time.Time
}

func setupIgnoredInputFleet(t *testing.T) ignoredInputFleet {
	t.Helper()
	s := newAPIServer(t, 2*time.Second)
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/sites", s.operator, `{"id":"fra1","name":"Frankfurt 1"}`, nil)
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/pools", s.operator, `{"id":"fra1-gpu","siteId":"fra1","kind":"bare-metal"}`, nil)
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/nodes", s.operator, `{"id":"n1","poolId":"fra1-gpu",
		"vcpu":64,"memoryMb":524288,"diskGb":2000,"gpus":[
		{"uuid":"GPU-n1-0","model":"a100","memoryMb":81920},{"uuid":"GPU-n1-1","model":"a100","memoryMb":81920}]}`, nil)
	require.NoError(t, s.pg.Q.TenantEnsure(context.Background(), "acme"))
	for res, max := range map[string]int{"gpu": 100, "vcpu": 1000, "memory": 1 << 20, "disk": 1000} {
		s.must(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/"+res, s.operator, map[string]int{"max": max}, nil)
	}
	now := s.pg.Now(t)
	f := ignoredInputFleet{s: s, acme: xtMakeTenant(t, s, "acme", "alice@acme", "vic@acme", now), now: now}
	var jt struct{ ID, Token string }
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/nodes/n1/join-tokens", s.operator, nil, &jt)
	f.joinToken, f.joinSecret = jt.ID, jt.Token
	return f
}

// path is the route's path with acme's or the fleet's objects in it, and
// the token that may call it: acme's member for acme's objects, else the
// operator.
func (f ignoredInputFleet) path(t *testing.T, route string) (string, string) {
	t.Helper()
	token := f.s.operator
	for _, p := range []string{"/v1/reservations", "/v1/instances", "/v1/webhook-endpoints", "/v1/commands", "/v1/events"} {
		if strings.HasPrefix(route, p) {
			token = f.acme.member
		}
	}
	var out []string
	for seg := range strings.SplitSeq(route, "/") {
		switch {
		case seg == ":tenant":
			seg = "acme"
		case seg == ":resource":
			seg = "gpu"
		case seg == ":tid":
			seg = f.joinToken
		case seg == ":cid":
			seg = "nc_none" // the node has no credential; the route is checked before the lookup
		case seg == ":name":
			seg = "standard"
		case strings.HasPrefix(seg, ":"):
			switch {
			case strings.HasPrefix(route, "/v1/reservations/"):
				seg = f.acme.reservation
			case strings.HasPrefix(route, "/v1/instances/"):
				seg = f.acme.instance
			case strings.HasPrefix(route, "/v1/commands/"):
				seg = f.acme.command
			case strings.HasPrefix(route, "/v1/webhook-endpoints/"):
				seg = f.acme.endpoint
			case strings.HasPrefix(route, "/v1/tokens/"):
				seg = f.acme.viewerID
			case strings.HasPrefix(route, "/v1/nodes/"):
				seg = "n1"
			case strings.HasPrefix(route, "/v1/devices/"), strings.HasPrefix(route, "/v1/gpus/"):
				seg = "GPU-n1-0"
			case strings.HasPrefix(route, "/v1/sites/"):
				seg = "fra1"
			case strings.HasPrefix(route, "/v1/pools/"):
				seg = "fra1-gpu"
			default:
				t.Fatalf("%s: no object for %s; add one to ignoredInputFleet.path", route, seg)
			}
		}
		out = append(out, url.PathEscape(seg))
	}
	return strings.Join(out, "/"), token
}

// sendWith is apiServer.call with extra headers; body "" sends none.
func (f ignoredInputFleet) sendWith(t *testing.T, method, target, token, body string, hdr map[string]string) apiResult {
	t.Helper()
	var raw []byte
	if body != "" {
		raw = []byte(body)
	}
	req, err := rawRequest(method, target, raw)
	require.NoError(t, err, "%s %s", method, target)
	if raw != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return f.s.serve(req, nil, 20*time.Second)
}

// writeBodies is a valid body for each write route that takes one, aimed
// at acme's objects and the fleet's, so that a route that ignored
// something else it was sent would act.
func (f ignoredInputFleet) writeBodies() map[string]string {
	later := f.now.Add(3 * time.Hour).Format(time.RFC3339)
	return map[string]string{
		"POST /v1/sites":                           `{"id":"im-site","name":"x"}`,
		"PATCH /v1/sites/:id":                      `{"name":"y"}`,
		"POST /v1/pools":                           `{"id":"im-pool","siteId":"fra1","kind":"bare-metal"}`,
		"POST /v1/nodes":                           `{"id":"im-node","poolId":"fra1-gpu","vcpu":1,"memoryMb":1,"diskGb":1}`,
		"POST /v1/nodes/:id/taint":                 `{"key":"im"}`,
		"POST /v1/nodes/:id/untaint":               `{"key":"im"}`,
		"POST /v1/nodes/:id/join":                  `{"poolId":"fra1-gpu"}`,
		"POST /v1/nodes/:id/join-tokens":           `{}`,
		"PUT /v1/devices/:id/health":               `{"health":"unhealthy"}`,
		"PUT /v1/gpus/:id/mode":                    `{"mode":"exclusive"}`,
		"PUT /v1/tenants/:tenant/quotas/:resource": `{"max":50}`,
		"PUT /v1/tenants/:tenant/priority-classes": `{"classes":[]}`,
		"PUT /v1/tenants/:tenant/fair-share":       `{"share":7}`,
		"POST /v1/tenants/:tenant/suspend":         `{"reason":"x"}`,
		"POST /v1/priority-classes":                `{"name":"im-class","value":10}`,
		"POST /v1/tokens":                          `{"tenant":"acme","identity":"im@acme","role":"member"}`,
		"POST /v1/reservations":                    fmt.Sprintf(`{"poolId":"fra1-gpu","vcpu":1,"start":%q,"end":%q}`, f.now.Add(time.Hour).Format(time.RFC3339), later),
		"POST /v1/reservations/:id/extend":         fmt.Sprintf(`{"end":%q}`, later),
		"POST /v1/instances":                       fmt.Sprintf(`{"reservationId":%q}`, f.acme.reservation),
		"POST /v1/commands":                        fmt.Sprintf(`{"nodeId":"n1","allocationId":%q,"kind":"exec","payload":{"script":"true"}}`, f.acme.allocation),
		"POST /v1/webhook-endpoints":               `{"url":"https://hooks.acme.example/im"}`,
		"PATCH /v1/webhook-endpoints/:id":          `{"description":"im"}`,
		"POST /v1/webhook-endpoints/:id/recover":   `{"since":"2020-01-01T00:00:00Z"}`,
	}
}

// writeRoute is what docs/openapi.yaml says a write route takes.
type writeRoute struct {
	body           bool // it describes a request body
	ifMatch        bool // it lists the If-Match parameter
	idempotencyKey bool // it lists the Idempotency-Key header
}

// writeRoutes is every POST, PUT, PATCH and DELETE the server registers,
// as "METHOD /path/:param", with what docs/openapi.yaml says it takes.
func writeRoutes(t *testing.T, e *echo.Echo) map[string]writeRoute {
	t.Helper()
	var spec struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(docs.OpenAPI, &spec))
	param := regexp.MustCompile(`:([A-Za-z0-9_]+)`)
	out := map[string]writeRoute{}
	for _, r := range e.Routes() {
		if !slices.Contains([]string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}, r.Method) {
			continue
		}
		node, ok := spec.Paths[param.ReplaceAllString(r.Path, "{$1}")][strings.ToLower(r.Method)]
		require.True(t, ok, "%s %s is not in docs/openapi.yaml", r.Method, r.Path)
		var op struct {
			RequestBody map[string]any   `yaml:"requestBody"`
			Parameters  []map[string]any `yaml:"parameters"`
		}
		require.NoError(t, node.Decode(&op), "%s %s", r.Method, r.Path)
		ifMatch := slices.ContainsFunc(op.Parameters, func(p map[string]any) bool {
			return p["$ref"] == "#/components/parameters/IfMatch"
		})
		key := slices.ContainsFunc(op.Parameters, func(p map[string]any) bool {
			return p["$ref"] == "#/components/parameters/IdempotencyKey" || p["name"] == "Idempotency-Key"
		})
		out[r.Method+" "+r.Path] = writeRoute{body: op.RequestBody != nil, ifMatch: ifMatch, idempotencyKey: key}
	}
	require.NotEmpty(t, out)
	return out
}

// A route that takes no body refuses one that is sent, like cordon and
// release always did: drain, undrain, retire and release of a node,
// rotate-secret and every DELETE ignored it, so a client's
// `{"force":true}` was dropped without a word and the action ran as if
// it had not been asked for.
func TestRoutesWithoutABodyRefuseOne(t *testing.T) {
	t.Parallel()
	f := setupIgnoredInputFleet(t)
	routes := writeRoutes(t, f.s.e)
	checked := 0
	for _, route := range slices.Sorted(func(yield func(string) bool) {
		for r := range routes {
			if !yield(r) {
				return
			}
		}
	}) {
		if routes[route].body {
			continue // it takes a body: strict decoding is tested on its own
		}
		method, rpath, _ := strings.Cut(route, " ")
		p, token := f.path(t, rpath)
		hdr := map[string]string{}
		// Not where a key is refused (routes that mint a secret).
		if method == http.MethodPost && !strings.HasSuffix(rpath, "/stream-tickets") && !strings.HasSuffix(rpath, "/rotate-secret") {
			hdr["Idempotency-Key"] = "ignored-body-" + rpath
		}
		r := f.sendWith(t, method, p, token, `{"force":true}`, hdr)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", route, r.body)
		require.Equal(t, core.CodeInvalidArgument, xtCode(r), route)
		require.Equal(t, `unknown field "force"`, xtMessage(r, nil, nil), route)
		checked++
	}
	require.GreaterOrEqual(t, checked, 15, "routes without a body")
}

// A route whose command has no version check refuses If-Match, as
// noIfMatch says: token create and revoke, webhook endpoint create,
// delete, rotate-secret and recover, and stream tickets took the header
// and dropped it, so a client's optimistic lock silently did nothing.
// Every write route, sent an If-Match no object is at, finds the version
// wrong (409) if docs/openapi.yaml lists If-Match for it, and refuses the
// header (400) if not; none acts.
func TestNoWriteRouteIgnoresIfMatch(t *testing.T) {
	t.Parallel()
	f := setupIgnoredInputFleet(t)
	bodies := f.writeBodies()
	routes := writeRoutes(t, f.s.e)
	for _, route := range slices.Sorted(func(yield func(string) bool) {
		for r := range routes {
			if !yield(r) {
				return
			}
		}
	}) {
		method, rpath, _ := strings.Cut(route, " ")
		body, ok := bodies[route]
		require.Equal(t, routes[route].body, ok, "%s: a body here if and only if the route takes one", route)
		p, token := f.path(t, rpath)
		hdr := map[string]string{"If-Match": "999"}
		if route == "POST /v1/commands" {
			hdr["Idempotency-Key"] = "if-match"
		}
		r := f.sendWith(t, method, p, token, body, hdr)
		if routes[route].ifMatch {
			if r.status != http.StatusConflict || !strings.Contains(xtMessage(r, nil, nil), "999") {
				t.Errorf("%s with If-Match: 999: %d %s; want 409 (not at version 999)", route, r.status, r.body)
			}
		} else if want := "If-Match is not supported on " + method + " " + openAPIPath(rpath); r.status != http.StatusBadRequest || !strings.Contains(xtMessage(r, nil, nil), want) {
			t.Errorf("%s with If-Match: 999: %d %s; want 400 (%s), as the spec lists no If-Match", route, r.status, r.body, want)
		}
	}
}

// A read takes no body either, and refuses one that says something: a
// client that put its filter in the body (`GET /v1/reservations` with
// `{"state":"pending"}`, as some search APIs take it) got every
// reservation, a page that looked filtered. Every GET under /v1 sent a
// body with a field answers 400 naming it, like a write that takes no
// body; an empty body or `{}` is no body.
func TestReadsRefuseABody(t *testing.T) {
	t.Parallel()
	f := setupIgnoredInputFleet(t)
	routes := f.s.e.Routes()
	slices.SortFunc(routes, func(x, y *echo.Route) int { return strings.Compare(x.Path, y.Path) })
	checked := 0
	for _, rt := range routes {
		if rt.Method != http.MethodGet || !strings.HasPrefix(rt.Path, "/v1/") {
			continue
		}
		p, token := f.path(t, rt.Path)
		r := f.sendWith(t, rt.Method, p, token, `{"state":"pending"}`, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "GET %s: %s", rt.Path, r.body)
		require.Equal(t, core.CodeInvalidArgument, xtCode(r), rt.Path)
		require.Equal(t, `unknown field "state"`, xtMessage(r, nil, nil), rt.Path)
		checked++
	}
	require.GreaterOrEqual(t, checked, 25, "GET routes")
	for _, body := range []string{"", "{}", " {} "} {
		r := f.sendWith(t, http.MethodGet, "/v1/reservations", f.acme.member, body, nil)
		require.Equal(t, http.StatusOK, r.status, "%q: %s", body, r.body)
	}
}
