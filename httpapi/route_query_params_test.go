package httpapi_test

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/docs"
)

// specRouteQueries is, for every operation of docs/openapi.yaml, the query
// parameters it lists, keyed as the server registers its route
// ("METHOD /path/:param").
func specRouteQueries(t *testing.T) map[string][]string {
	t.Helper()
	type param struct {
		Ref  string `yaml:"$ref"`
		Name string `yaml:"name"`
		In   string `yaml:"in"`
	}
	var spec struct {
		Paths      map[string]map[string]yaml.Node `yaml:"paths"`
		Components struct {
			Parameters map[string]param `yaml:"parameters"`
		} `yaml:"components"`
	}
	require.NoError(t, yaml.Unmarshal(docs.OpenAPI, &spec))
	braces := regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)
	out := map[string][]string{}
	for path, item := range spec.Paths {
		var common []param
		if n, ok := item["parameters"]; ok {
			require.NoError(t, n.Decode(&common), path)
		}
		for method, node := range item {
			if method == "parameters" {
				continue
			}
			var op struct {
				Parameters []param `yaml:"parameters"`
			}
			require.NoError(t, node.Decode(&op), "%s %s", method, path)
			names := []string{}
			for _, p := range append(slices.Clone(common), op.Parameters...) {
				if p.Ref != "" {
					p = spec.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
				}
				if p.In == "query" {
					names = append(names, p.Name)
				}
			}
			out[strings.ToUpper(method)+" "+braces.ReplaceAllString(path, ":$1")] = names
		}
	}
	return out
}

// Every route refuses a query parameter it does not take, as the lists
// always did (TestListQueryParameters): the writes and the reads of one
// object ignored their query strings, so `POST /v1/reservations?dryRun=true`
// booked capacity and charged the tenant's quota, `DELETE
// /v1/webhook-endpoints/{id}?dryRun=true` deleted the endpoint, and
// `GET /v1/reservations/{id}?tenant=globex` answered as if no filter had
// been asked for. Each route, sent a valid request with ?dryRun=true,
// answers 400 INVALID_ARGUMENT naming the parameter, and nothing is written
// anywhere; each query parameter docs/openapi.yaml lists for it is still
// taken.
func TestEveryRouteRefusesAnUnknownQueryParameter(t *testing.T) {
	t.Parallel()
	f := setupIgnoredInputFleet(t)
	ctx := context.Background()
	bodies := f.writeBodies()
	spec := specRouteQueries(t)
	outboxRows := func() int {
		var n int
		require.NoError(t, f.s.pg.Pool.QueryRow(ctx, "SELECT count(*) FROM outbox").Scan(&n))
		return n
	}
	eventsBefore, acmeBefore := outboxRows(), xtTenantRows(t, f.s, "acme")

	routes := f.s.e.Routes()
	slices.SortFunc(routes, func(x, y *echo.Route) int { return strings.Compare(x.Path+" "+x.Method, y.Path+" "+y.Method) })
	send := func(rt *echo.Route, query string) apiResult {
		t.Helper()
		key := rt.Method + " " + rt.Path
		p, token := f.path(t, rt.Path)
		if key == "POST /v1/nodes/:id/join" {
			token = f.joinSecret
		}
		hdr := map[string]string{}
		if key == "POST /v1/commands" {
			hdr["Idempotency-Key"] = "query-params"
		}
		return f.sendWith(t, rt.Method, p+"?"+query, token, bodies[key], hdr)
	}
	checked := 0
	var v1 []*echo.Route
	for _, rt := range routes {
		if rt.Method == echo.RouteNotFound || !strings.HasPrefix(rt.Path, "/v1/") {
			continue
		}
		v1 = append(v1, rt)
		key := rt.Method + " " + rt.Path
		_, ok := spec[key]
		require.True(t, ok, "%s is not in docs/openapi.yaml", key)
		r := send(rt, "dryRun=true")
		if r.status != http.StatusBadRequest || xtCode(r) != core.CodeInvalidArgument ||
			!strings.Contains(xtMessage(r, nil, nil), `unknown query parameter "dryRun"`) {
			t.Errorf("%s?dryRun=true: %d %s; want 400 unknown query parameter", key, r.status, r.body)
		} else if documented := rt.Method + " " + openAPIPath(rt.Path); !strings.Contains(xtMessage(r, nil, nil), ": "+documented+" takes") {
			t.Errorf("%s?dryRun=true: %s; want the route written as docs/openapi.yaml does, %s", key, r.body, documented)
		}
		checked++
	}
	require.GreaterOrEqual(t, checked, 60, "routes under /v1")
	require.Equal(t, eventsBefore, outboxRows(), "a request with an unknown query parameter wrote an event")
	require.Equal(t, acmeBefore, xtTenantRows(t, f.s, "acme"), "a request with an unknown query parameter changed acme's rows")

	// What the spec lists is taken: empty, each is the parameter left out,
	// and never refused as unknown. (The lists and the stream take theirs
	// in depth in TestListQueryParameters.)
	for _, rt := range v1 {
		key := rt.Method + " " + rt.Path
		if key == "GET /v1/events/stream" {
			continue
		}
		for _, name := range spec[key] {
			r := send(rt, name+"=")
			require.NotContains(t, xtMessage(r, nil, nil), "unknown query parameter", "%s?%s=: %d %s", key, name, r.status, r.body)
		}
	}
}

// openAPIPath writes an echo route pattern as docs/openapi.yaml does:
// /v1/tokens/:id is /v1/tokens/{id}.
func openAPIPath(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			segs[i] = "{" + name + "}"
		}
	}
	return strings.Join(segs, "/")
}
