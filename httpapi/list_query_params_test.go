package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/docs"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/queries"
	"github.com/bettercompute/compute/webhook"
)

// queryRoute is a GET operation of docs/openapi.yaml that reads a query
// string: a list (operationId list…) or the event stream.
type queryRoute struct {
	path   string              // as in the spec, {id} and all
	params []string            // its query parameters, in the spec's order
	enums  map[string][]string // the enumerated ones, with their values
	needs  map[string]bool     // the required ones
}

// specQueryRoutes reads the list routes and the event stream from the spec.
func specQueryRoutes(t *testing.T) []queryRoute {
	t.Helper()
	type param struct {
		Ref      string `yaml:"$ref"`
		Name     string `yaml:"name"`
		In       string `yaml:"in"`
		Required bool   `yaml:"required"`
		Schema   struct {
			Enum []string `yaml:"enum"`
		} `yaml:"schema"`
	}
	type operation struct {
		OperationID string  `yaml:"operationId"`
		Parameters  []param `yaml:"parameters"`
	}
	var spec struct {
		Paths      map[string]map[string]yaml.Node `yaml:"paths"`
		Components struct {
			Parameters map[string]param `yaml:"parameters"`
		} `yaml:"components"`
	}
	require.NoError(t, yaml.Unmarshal(docs.OpenAPI, &spec))
	var out []queryRoute
	for path, item := range spec.Paths {
		get, ok := item["get"]
		if !ok {
			continue
		}
		var op operation
		require.NoError(t, get.Decode(&op))
		if !strings.HasPrefix(op.OperationID, "list") && op.OperationID != "streamEvents" {
			continue
		}
		r := queryRoute{path: path, enums: map[string][]string{}, needs: map[string]bool{}}
		for _, p := range op.Parameters {
			if p.Ref != "" {
				p = spec.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
			}
			if p.In != "query" {
				continue
			}
			r.params = append(r.params, p.Name)
			if len(p.Schema.Enum) > 0 {
				r.enums[p.Name] = p.Schema.Enum
			}
			r.needs[p.Name] = p.Required
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b queryRoute) int { return strings.Compare(a.path, b.path) })
	return out
}

// everyFeature serves every feature's routes, as main does, the broker
// running so that the event stream answers.
func everyFeature(t *testing.T) httpapi.Routes {
	return func(r httpapi.Router) {
		pool := r.Deps.Pool
		cmds := commands.New(pool, commands.Config{})
		broker := eventstream.NewBroker(pool, eventstream.BrokerOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		go func() { defer close(ran); broker.Run(ctx, 5*time.Millisecond, nil) }()
		t.Cleanup(func() { cancel(); <-ran })
		for _, routes := range (httpapi.Features{
			Commands: cmds, Queries: queries.New(pool), Broker: broker, EventReader: eventstream.NewReader(pool),
			Webhooks: webhook.New(pool, cmds, webhook.Config{AllowPrivate: true}, slog.New(slog.DiscardHandler)),
		}).Routes() {
			routes(r)
		}
	}
}

// get sends GET path and returns its status and, for an error, its
// envelope; it reads no further than the headers of a 200, so that it
// also serves the event stream.
func (s *testServer) get(t *testing.T, path, token string) (int, httpapi.ErrorDetail) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	if res.StatusCode == http.StatusOK {
		return res.StatusCode, httpapi.ErrorDetail{}
	}
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, response{status: res.StatusCode, body: b}.errorBody(t)
}

// Every list route, and the event stream, takes exactly the query
// parameters docs/openapi.yaml gives it, each at most once (?types= may
// repeat), and an empty value is the parameter left out. Any other
// parameter, or one given twice, is 400 INVALID_ARGUMENT rather than an
// unfiltered page. An enumerated filter takes each of its values (200),
// and refuses any other value, another case included, with 400
// INVALID_ARGUMENT quoting at most 64 bytes of it, for operators and
// tenants alike.
func TestListQueryParameters(t *testing.T) {
	t.Parallel()
	f := buildFleet(t, setup(t, everyFeature(t)))
	var rsv struct{ ID string }
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, f.reservationBody(t, 1), nil).decode(t, &rsv)
	var ep struct{ ID string }
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/webhook-endpoints", f.member,
		map[string]any{"url": "https://hooks.acme.example/in"}, nil).decode(t, &ep)
	paths := strings.NewReplacer("{id}", "n1", "{tenant}", "acme")
	required := map[string]string{"reservationId": rsv.ID}

	routes := specQueryRoutes(t)
	require.Len(t, routes, 15, "list routes and the stream in the spec")
	enums := 0
	for _, r := range routes {
		path := paths.Replace(r.path)
		if strings.HasPrefix(r.path, "/v1/webhook-endpoints/{id}") {
			path = strings.Replace(r.path, "{id}", ep.ID, 1)
		}
		base := url.Values{}
		for name, need := range r.needs {
			if need {
				require.Contains(t, required, name, "%s: a value for its required %s", r.path, name)
				base.Set(name, required[name])
			}
		}
		with := func(add func(url.Values)) string {
			q := url.Values{}
			for k, v := range base {
				q[k] = slices.Clone(v)
			}
			add(q)
			if len(q) == 0 {
				return path
			}
			return path + "?" + q.Encode()
		}
		expect := func(status int, p, token, contains string) {
			t.Helper()
			got, e := f.get(t, p, token)
			require.Equal(t, status, got, "GET %s: %+v", p, e)
			if status != http.StatusOK {
				require.Equal(t, core.CodeInvalidArgument, e.Code, "GET %s", p)
				require.Contains(t, e.Message, contains, "GET %s", p)
			}
		}

		expect(http.StatusOK, with(func(url.Values) {}), f.operator, "")
		for _, name := range r.params {
			if !r.needs[name] { // empty: the parameter left out
				expect(http.StatusOK, with(func(q url.Values) { q.Set(name, "") }), f.operator, "")
			}
			twice := func(q url.Values) { q[name] = []string{q.Get(name), q.Get(name)} }
			if name == "types" {
				expect(http.StatusOK, with(func(q url.Values) { q["types"] = []string{"reservation.booked", "quota.set"} }), f.operator, "")
			} else {
				expect(http.StatusBadRequest, with(twice), f.operator, "given 2 times")
			}
		}
		for _, unknown := range []string{"bogus", "State", "page", strings.Repeat("x", 200)} {
			expect(http.StatusBadRequest, with(func(q url.Values) { q.Set(unknown, "1") }), f.operator, "unknown query parameter")
		}

		for name, values := range r.enums {
			enums++
			for _, token := range []string{f.operator, f.member} {
				for _, v := range values {
					expect(http.StatusOK, with(func(q url.Values) { q.Set(name, v) }), token, "")
				}
				expect(http.StatusBadRequest, with(func(q url.Values) { q.Set(name, "bogus") }), token, `"bogus" is not one of `+strings.Join(values, ", "))
				expect(http.StatusBadRequest, with(func(q url.Values) { q.Set(name, strings.ToUpper(values[0])) }), token, "case-sensitive: "+values[0])
				long := strings.Repeat("z", 300)
				got, e := f.get(t, with(func(q url.Values) { q.Set(name, long) }), token)
				require.Equal(t, http.StatusBadRequest, got)
				require.Equal(t, core.CodeInvalidArgument, e.Code)
				require.Contains(t, e.Message, `"`+strings.Repeat("z", 64)+`…"`, "at most 64 bytes of the value")
				require.NotContains(t, e.Message, strings.Repeat("z", 65))
			}
		}
	}
	require.Positive(t, enums, "the spec has enumerated filters")
}
