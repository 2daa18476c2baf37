package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/docs"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/queries"
	"github.com/bettercompute/compute/webhook"
)

// contract holds every answer of the API to docs/openapi.yaml the way a
// client generated from it in another language decodes: strictly. A
// required field missing, a null the schema does not allow, an enum value it
// does not list, a number where it says string, a status or content type
// the operation does not document, an error body that is not the envelope:
// each breaks such a client, while the Go client (lenient) decodes on.
type contract struct {
	router routers.Router

	mu   sync.Mutex
	seen map[string]bool // "METHOD /path/{template} status" answered
}

// loadContract loads docs/openapi.yaml with kin-openapi's loader (the
// OpenAPI 3.1 validator; docs/decisions/0019-strict-response-validation.md).
func loadContract(t *testing.T) *contract {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docs.OpenAPI)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()), "docs/openapi.yaml is not a valid OpenAPI document")
	// The servers entry names localhost:8080; the test server is elsewhere.
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	require.NoError(t, err)
	return &contract{router: router, seen: map[string]bool{}}
}

// check validates one answer to req against the operation the spec
// describes for it, reporting every mismatch with t.Errorf so one run lists
// them all.
func (c *contract) check(t *testing.T, req *http.Request, r response) {
	t.Helper()
	for _, err := range c.mismatches(req, r) {
		t.Error(err)
	}
}

// mismatches lists how one answer to req departs from the operation the
// spec describes for it.
func (c *contract) mismatches(req *http.Request, r response) []error {
	var errs []error
	what := req.Method + " " + req.URL.RequestURI()
	// The router splits the path on "/": route by the escaped path, so an
	// id sent as GPU-a%2Fmig-0 stays one segment.
	routed := req.Clone(req.Context())
	routed.URL.Path = req.URL.EscapedPath()
	if req.Method == http.MethodHead {
		routed.Method = http.MethodGet // a HEAD is described by its GET
	}
	route, params, err := c.router.FindRoute(routed)
	if err != nil && r.status == http.StatusMethodNotAllowed {
		// A method the path lacks has no operation of its own: its 405 is
		// the one each of the path's operations documents.
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			other := routed.Clone(req.Context())
			other.Method = m
			if route, params, err = c.router.FindRoute(other); err == nil {
				break
			}
		}
	}
	if err != nil {
		return append(errs, fmt.Errorf("%s: no operation in docs/openapi.yaml: %w", what, err))
	}
	c.mu.Lock()
	c.seen[fmt.Sprintf("%s %s %d", route.Method, route.Path, r.status)] = true
	c.mu.Unlock()

	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 r.status,
		Header:                 r.header,
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true, // an undocumented status is a mismatch
			MultiError:            true,
		},
	}
	in.SetBodyBytes(r.body)
	if mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type")); mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		// A text body (the YAML description, Prometheus text) is a string
		// to a client; kin-openapi would parse YAML into an object. Its
		// content type is still checked below.
		in.Options.ExcludeResponseBody = true
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return append(errs, fmt.Errorf("%s answered %d, which docs/openapi.yaml does not describe: %w\nbody: %s", what, r.status, err, clip(r.body)))
	}
	if req.Method == http.MethodHead {
		// ValidateResponse skips HEAD: its status must still be the GET's.
		if route.Operation.Responses.Status(r.status) == nil {
			errs = append(errs, fmt.Errorf("%s answered %d, which docs/openapi.yaml does not describe", what, r.status))
		}
		return errs // no body
	}
	// ValidateResponse passes any body where the spec describes none, and
	// any Content-Type where the media type has no schema: a strict client
	// does not.
	desc := route.Operation.Responses.Status(r.status)
	if desc == nil || desc.Value == nil {
		return errs
	}
	if len(desc.Value.Content) == 0 {
		if len(r.body) != 0 {
			errs = append(errs, fmt.Errorf("%s answered %d with a body (%s), which docs/openapi.yaml describes without one: %s",
				what, r.status, r.header.Get("Content-Type"), clip(r.body)))
		}
		return errs
	}
	mediaType, _, err := mime.ParseMediaType(r.header.Get("Content-Type"))
	if err != nil || desc.Value.Content.Get(mediaType) == nil {
		errs = append(errs, fmt.Errorf("%s answered %d as %q; docs/openapi.yaml lists %v", what, r.status,
			r.header.Get("Content-Type"), slices.Sorted(maps.Keys(desc.Value.Content))))
	}
	return errs
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// contractServer is every feature route behind a real HTTP listener, with
// every answer checked against the contract.
type contractServer struct {
	*apiServer
	url      string
	contract *contract
}

// send makes one request and checks its answer against the spec.
func (s *contractServer) send(t *testing.T, method, path, token string, body any, hdr map[string]string) response {
	t.Helper()
	raw := bodyBytes(t, body)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	r := response{status: res.StatusCode, header: res.Header, body: b}
	s.contract.check(t, req, r)
	return r
}

// ok is send that requires the status and decodes the body into v (nil:
// not decoded).
func (s *contractServer) ok(t *testing.T, status int, method, path, token string, body any, hdr map[string]string, v any) response {
	t.Helper()
	r := s.send(t, method, path, token, body, hdr)
	require.Equal(t, status, r.status, "%s %s: %s", method, path, r.body)
	if v != nil {
		r.decode(t, v)
	}
	return r
}

// fails is send that requires the status and the error code.
func (s *contractServer) fails(t *testing.T, status int, code, method, path, token string, body any, hdr map[string]string) {
	t.Helper()
	r := s.send(t, method, path, token, body, hdr)
	require.Equal(t, status, r.status, "%s %s: %s", method, path, r.body)
	require.Equal(t, code, string(r.errorBody(t).Code), "%s %s: %s", method, path, r.body)
}

// newContractServer is newAPIServer's server with the per-token rate
// limit on, so every /v1 answer carries the RateLimit-* headers the spec
// describes, and the default limit on failed authentications, so a client
// that keeps failing meets its 429.
func newContractServer(t *testing.T) *contractServer {
	t.Helper()
	ctx := context.Background()
	pg := pgtest.New(t)
	logs := &tailLog{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	clk := clock.New(logger)
	_, err := clk.Sample(ctx, queries.New(pg.Pool))
	require.NoError(t, err)
	h := commands.New(pg.Pool, commands.Config{})
	qs := queries.New(pg.Pool)
	qs.WaitTimeout = 10 * time.Second
	qs.PollInterval = 5 * time.Millisecond
	broker := eventstream.NewBroker(pg.Pool, eventstream.BrokerOptions{})
	e := httpapi.New(httpapi.Deps{
		Pool: pg.Pool, Commands: h, Clock: clk, Auth: authn.New(pg.Pool, 0), Logger: logger,
		BodyLimit: testBodyLimit, Registry: prometheus.NewRegistry(),
		RateLimit: 1000, RateBurst: 100000,
	}, httpapi.Features{
		Commands:    h,
		Queries:     qs,
		Broker:      broker,
		EventReader: eventstream.NewReader(pg.Pool),
		Webhooks:    webhook.New(pg.Pool, h, webhook.Config{AllowPrivate: true}, logger),
	}.Routes()...)
	created, err := (&commands.Tokens{Pool: pg.Pool}).CreateToken(ctx,
		core.Actor{Role: core.RoleOperator, Identity: "test-bootstrap"}, "ops", "root@ops", core.RoleOperator)
	require.NoError(t, err)
	api := &apiServer{e: e, pg: pg, h: h, broker: broker, logs: logs, operator: created.Secret}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return &contractServer{apiServer: api, url: srv.URL, contract: loadContract(t)}
}

// idOf is the "id" of a JSON object.
func idOf(t *testing.T, r response) string {
	t.Helper()
	var v struct{ ID string }
	r.decode(t, &v)
	require.NotEmpty(t, v.ID, "body: %s", r.body)
	return v.ID
}
