package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/queries"
	"github.com/bettercompute/compute/webhook"
)

// The fuzz targets here drive one in-process server (every feature route,
// as main builds it, on a real database) through e.ServeHTTP, so an input
// costs one handler call and its SQL, not a network round trip. Requests
// are parsed from raw request heads with http.ReadRequest, the way the
// server parses them, so the fuzzer reaches handlers with exactly what a
// client could send. The one property: no input is answered with 500, and
// every error is the API's JSON envelope with a known code.
//
// Without -fuzz they run their seed corpora (testdata/fuzz/<Name>/) as
// ordinary tests; scripts/fuzz-short.sh runs each for a while.

// apiServer is every feature route on one fresh database, driven in
// process.
type apiServer struct {
	e        *echo.Echo
	pg       *pgtest.DB
	h        *commands.Handlers
	broker   *eventstream.Broker
	logs     *tailLog
	operator string // bearer secret of root@ops, role operator
}

// newAPIServer builds the server with httpapi.Features{...}.Routes(), as
// main does. wait bounds a minPosition wait: fuzzers keep it short, since
// a well-formed position from the future waits all of it.
func newAPIServer(tb testing.TB, wait time.Duration) *apiServer {
	tb.Helper()
	ctx := context.Background()
	pg := pgtest.New(tb)
	logs := &tailLog{}
	// Warn and above: the error handler logs every 500 with its cause at
	// Error, which is what a failing input needs to be understood.
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	clk := clock.New(logger)
	_, err := clk.Sample(ctx, queries.New(pg.Pool))
	require.NoError(tb, err)

	h := commands.New(pg.Pool, commands.Config{})
	qs := queries.New(pg.Pool)
	qs.WaitTimeout = wait
	qs.PollInterval = 5 * time.Millisecond
	broker := eventstream.NewBroker(pg.Pool, eventstream.BrokerOptions{})
	e := httpapi.New(httpapi.Deps{
		Pool: pg.Pool, Commands: commands.New(pg.Pool, commands.Config{}), Clock: clk, Auth: authn.New(pg.Pool, 0), Logger: logger,
		BodyLimit: testBodyLimit, Registry: prometheus.NewRegistry(),
		// The fuzzers send made-up tokens by design, all from one address;
		// the failure limit would soon answer everything with 429.
		AuthFailureBurst: 1 << 30,
	}, httpapi.Features{
		Commands:    h,
		Queries:     qs,
		Broker:      broker,
		EventReader: eventstream.NewReader(pg.Pool),
		Webhooks:    webhook.New(pg.Pool, commands.New(pg.Pool, commands.Config{}), webhook.Config{AllowPrivate: true}, logger),
	}.Routes()...)

	created, err := (&commands.Tokens{Pool: pg.Pool}).CreateToken(ctx,
		core.Actor{Role: core.RoleOperator, Identity: "test-bootstrap"}, "ops", "root@ops", core.RoleOperator)
	require.NoError(tb, err)
	return &apiServer{e: e, pg: pg, h: h, broker: broker, logs: logs, operator: created.Secret}
}

// runBroker runs the event broker until the test ends (the stream routes
// need it for live events).
func (s *apiServer) runBroker(tb testing.TB) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); s.broker.Run(ctx, 5*time.Millisecond, nil) }()
	tb.Cleanup(func() { cancel(); <-ran })
}

// apiResult is what one in-process call returned.
type apiResult struct {
	status int
	header http.Header
	body   []byte
	// timedOut is set when a stream ran into serve's limit before stop
	// accepted what it had written.
	timedOut bool
}

// serve runs req through the server. A request to the event stream gets a
// writer that ends the request once stop says the stream has shown
// enough (nil: after its first frame), because a stream never ends by
// itself; limit bounds how long that may take.
func (s *apiServer) serve(req *http.Request, stop func([]byte) bool, limit time.Duration) apiResult {
	if !strings.HasSuffix(req.URL.Path, "/events/stream") {
		rec := httptest.NewRecorder()
		s.e.ServeHTTP(rec, req)
		return apiResult{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	}
	if stop == nil {
		stop = func([]byte) bool { return true }
	}
	ctx, cancel := context.WithTimeout(req.Context(), limit)
	defer cancel()
	w := &stoppingWriter{ResponseRecorder: httptest.NewRecorder(), stop: stop, cancel: cancel}
	s.e.ServeHTTP(w, req.WithContext(ctx))
	return apiResult{status: w.Code, header: w.Header(), body: w.Body.Bytes(),
		timedOut: errors.Is(ctx.Err(), context.DeadlineExceeded)}
}

// stoppingWriter cancels the request once stop accepts what was written.
// It is written to only by the handler's goroutine.
type stoppingWriter struct {
	*httptest.ResponseRecorder
	stop   func([]byte) bool
	cancel context.CancelFunc
}

func (w *stoppingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseRecorder.Write(p)
	if w.stop(w.Body.Bytes()) {
		w.cancel()
	}
	return n, err
}

func (w *stoppingWriter) Flush() { w.ResponseRecorder.Flush() }

// bodyBytes is a request body given as nothing (nil), raw text, raw bytes
// or a value to encode as JSON.
func bodyBytes(tb testing.TB, body any) []byte {
	tb.Helper()
	switch b := body.(type) {
	case nil:
		return nil
	case string:
		return []byte(b)
	case []byte:
		return b
	default:
		raw, err := json.Marshal(b)
		require.NoError(tb, err)
		return raw
	}
}

// call sends a request with a JSON body (nil: none) as token and requires
// it to parse.
func (s *apiServer) call(tb testing.TB, method, target, token string, body any) apiResult {
	tb.Helper()
	raw := bodyBytes(tb, body)
	req, err := rawRequest(method, target, raw)
	require.NoError(tb, err, "%s %s", method, target)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return s.serve(req, nil, 20*time.Second)
}

// must is call that requires the status.
func (s *apiServer) must(tb testing.TB, status int, method, target, token string, body any, v any) apiResult {
	tb.Helper()
	r := s.call(tb, method, target, token, body)
	require.Equal(tb, status, r.status, "%s %s: %s", method, target, r.body)
	if v != nil {
		require.NoError(tb, json.Unmarshal(r.body, v), "%s %s: %s", method, target, r.body)
	}
	return r
}

// rawRequest parses a request head the way net/http's server does, so a
// target the server would refuse at the connection is refused here too.
func rawRequest(method, target string, body []byte) (*http.Request, error) {
	head := method + " " + target + " HTTP/1.1\r\nHost: compute.test\r\n\r\n"
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
	}
	return req, nil
}

// validHeaderValue is what net/http's server accepts in a header value
// (httpguts.ValidHeaderFieldValue): no control characters but tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < 0x20 && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// tailLog keeps the last 64 KiB of the server's log, for failure messages.
type tailLog struct {
	mu  sync.Mutex
	buf []byte
}

func (l *tailLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - 64<<10; over > 0 {
		l.buf = slices.Clone(l.buf[over:])
	}
	return len(p), nil
}

// about returns the log lines of request id rid.
func (l *tailLog) about(rid string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.SplitSeq(string(l.buf), "\n") {
		if rid != "" && strings.Contains(line, rid) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// knownCodes are the codes of the error envelope.
var knownCodes = []core.Code{core.CodeInvalidArgument, core.CodeUnsupportedMediaType, core.CodeUnauthenticated, core.CodePermissionDenied,
	core.CodeNotFound, core.CodeMethodNotAllowed, core.CodeConflict, core.CodeQuotaExceeded, core.CodeIdempotencyKeyReused,
	core.CodeCursorExpired, core.CodeUnavailable, core.CodeRateLimited, core.CodeTokenLifetimeExceeded, core.CodeTenantSuspended, core.CodeInternal}

// checkResponse is the property every fuzzed request must keep: never a
// 500 (nor any 5xx but 503 UNAVAILABLE, which a minPosition wait may
// give), and a non-2xx answer is exactly the error envelope with a known
// code. what describes the request for the failure message.
func (s *apiServer) checkResponse(t *testing.T, r apiResult, what string) {
	t.Helper()
	rid := r.header.Get(echo.HeaderXRequestID)
	if r.status >= 500 && r.status != http.StatusServiceUnavailable {
		t.Fatalf("%s: status %d, body %s\nserver log:\n%s", what, r.status, r.body, s.logs.about(rid))
	}
	if r.status < 300 {
		if r.header.Get(echo.HeaderContentType) != "text/event-stream" && !json.Valid(r.body) {
			t.Fatalf("%s: status %d with a body that is not JSON: %q", what, r.status, r.body)
		}
		return
	}
	var env httpapi.ErrorBody
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil || env.Error.Code == "" || env.Error.Message == "" {
		t.Fatalf("%s: status %d without the error envelope (%v): %q", what, r.status, err, r.body)
	}
	if !slices.Contains(knownCodes, env.Error.Code) {
		t.Fatalf("%s: status %d with unknown code %q", what, r.status, env.Error.Code)
	}
	if r.status == http.StatusServiceUnavailable && env.Error.Code != core.CodeUnavailable {
		t.Fatalf("%s: 503 with code %s: %s\nserver log:\n%s", what, env.Error.Code, r.body, s.logs.about(rid))
	}
}

// knownFindings are 500s the fuzzers found that are reported and not fixed
// yet. Each excuses a 500 only for the input shape it names, so a fuzz run
// looks past it for new ones instead of stopping at the same input every
// time. When a fix lands, delete the entry and add the input to the seed
// corpus as a regression test.
var knownFindings = []struct {
	name  string
	match func(req *http.Request) bool
}{
	// None open. F1 (GET /v1/events?types= with NUL or invalid UTF-8 was a
	// 500) was fixed in bcdb621; its input is the seed events-types-nul.
}

// excuse skips the input when it got a 500 that a known finding explains.
func excuse(t *testing.T, req *http.Request, r apiResult) {
	t.Helper()
	if r.status != http.StatusInternalServerError {
		return
	}
	for _, f := range knownFindings {
		if f.match(req) {
			t.Skip("known finding " + f.name)
		}
	}
}

// fuzzFleet is what the fuzz server is seeded with, built through the API:
// site fra1, pool fra1-gpu, node n1 with two exclusive GPUs, tenant acme
// with quotas, a member and a viewer token, a reservation and a webhook
// endpoint, and a spare token (the target of token routes, so the fuzzer
// does not revoke the tokens it sends).
type fuzzFleet struct {
	*apiServer
	member, viewer string
	// ids are the real ids a path parameter is picked from.
	ids []string
}

func newFuzzFleet(tb testing.TB) *fuzzFleet {
	tb.Helper()
	s := newAPIServer(tb, 50*time.Millisecond)
	f := &fuzzFleet{apiServer: s}
	var tok struct{ ID, Token string }
	token := func(identity string, role core.Role) {
		s.must(tb, http.StatusCreated, http.MethodPost, "/v1/tokens", s.operator,
			map[string]string{"tenant": "acme", "identity": identity, "role": string(role)}, &tok)
	}
	token("alice@acme", core.RoleMember)
	f.member = tok.Token
	token("vic@acme", core.RoleViewer)
	f.viewer = tok.Token
	token("spare@acme", core.RoleMember)
	spare := tok.ID

	s.must(tb, http.StatusCreated, http.MethodPost, "/v1/sites", s.operator, `{"id":"fra1","name":"Frankfurt 1"}`, nil)
	s.must(tb, http.StatusCreated, http.MethodPost, "/v1/pools", s.operator,
		`{"id":"fra1-gpu","siteId":"fra1","kind":"bare-metal","cpuRatio":2}`, nil)
	s.must(tb, http.StatusCreated, http.MethodPost, "/v1/nodes", s.operator, `{"id":"n1","poolId":"fra1-gpu",
		"vcpu":64,"memoryMb":524288,"diskGb":2000,
		"gpus":[{"uuid":"GPU-n1-0","model":"a100","memoryMb":81920},
		        {"uuid":"GPU-n1-1","model":"a100","memoryMb":81920,"layout":{"mode":"exclusive"}}]}`, nil)
	for res, max := range map[string]int{"gpu": 1000, "vcpu": 100000, "memory": 10000000, "disk": 1000000} {
		s.must(tb, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/"+res, s.operator, map[string]int{"max": max}, nil)
	}
	now := s.pg.Now(tb)
	var rsv struct{ ID, Position string }
	s.must(tb, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, map[string]any{
		"poolId": "fra1-gpu", "gpus": 1, "vcpu": 1, "start": now.Format(time.RFC3339), "end": now.Add(2 * time.Hour).Format(time.RFC3339),
	}, &rsv)
	require.NoError(tb, commandstest.Activate(context.Background(), commands.New(s.pg.Pool, commands.Config{}), rsv.ID))
	var ep struct{ ID string }
	s.must(tb, http.StatusCreated, http.MethodPost, "/v1/webhook-endpoints", f.member,
		map[string]any{"url": "https://hooks.acme.example/in", "eventTypes": []string{"reservation.booked"}}, &ep)
	var cmd struct{ ID string }
	r := s.call(tb, http.MethodPost, "/v1/commands", f.member,
		map[string]any{"nodeId": "n1", "kind": "exec", "payload": map[string]any{"script": "nvidia-smi"}})
	require.Equal(tb, http.StatusBadRequest, r.status, "commands.run without Idempotency-Key: %s", r.body)
	req, err := rawRequest(http.MethodPost, "/v1/commands",
		[]byte(`{"nodeId":"n1","kind":"exec","payload":{"script":"nvidia-smi"}}`))
	require.NoError(tb, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+f.member)
	req.Header.Set("Idempotency-Key", "seed-1")
	r = s.serve(req, nil, time.Second)
	require.Equal(tb, http.StatusCreated, r.status, "POST /v1/commands: %s", r.body)
	require.NoError(tb, json.Unmarshal(r.body, &cmd))
	var inst struct{ ID string }
	s.must(tb, http.StatusCreated, http.MethodPost, "/v1/instances", f.member,
		map[string]any{"reservationId": rsv.ID, "image": "registry.acme.example/train:1"}, &inst)
	s.catchUp(tb)
	// Path ids by index: 0 reservation, 1 node, 2 GPU, 3 webhook endpoint,
	// 4 token, 5 tenant, 6 pool, 7 node command, 8 instance, 9 site. Seeds
	// rely on the order: append only.
	f.ids = []string{rsv.ID, "n1", "GPU-n1-0", ep.ID, spare, "acme", "fra1-gpu", cmd.ID, inst.ID, "fra1"}
	return f
}

// catchUp runs every projection until it has passed the newest event, so
// the read routes have something to page through.
func (s *apiServer) catchUp(tb testing.TB) {
	tb.Helper()
	ctx := context.Background()
	var head outbox.Position
	require.NoError(tb, s.pg.Pool.QueryRow(ctx, "SELECT txid::text::bigint, seq FROM outbox ORDER BY txid DESC, seq DESC LIMIT 1").
		Scan(&head.TxID, &head.Seq))
	var disps []*outbox.Dispatcher
	for _, p := range projections.All() {
		disps = append(disps, outbox.NewTxDispatcher(s.pg.Pool, "fuzz", p, nil))
	}
	require.Eventually(tb, func() bool {
		done := true
		for _, d := range disps {
			_, err := d.RunOnce(ctx)
			require.NoError(tb, err)
			cur, err := outbox.CursorOf(ctx, s.pg.Q, d.SinkID())
			require.NoError(tb, err)
			done = done && !cur.Less(head)
		}
		return done
	}, 20*time.Second, 2*time.Millisecond)
}

// token picks the caller: operator, member, viewer, or a made-up bearer
// token (the authentication path).
func (f *fuzzFleet) token(sel uint8, made string) string {
	switch sel & 3 {
	case 0:
		return f.operator
	case 1:
		return f.member
	case 2:
		return f.viewer
	}
	return made
}

// pathFor fills a route template's parameters: :tenant and :resource get
// fixed values unless fuzzed, any other parameter a real id (chosen by
// pick) or, when fuzzed is set, the fuzzer's string.
func (f *fuzzFleet) pathFor(template string, pick int, fuzzed bool, id string) string {
	if !fuzzed {
		id = f.ids[pick%len(f.ids)]
	}
	var out []string
	for seg := range strings.SplitSeq(template, "/") {
		switch {
		case seg == ":resource" && !fuzzed:
			seg = "gpu"
		case strings.HasPrefix(seg, ":"):
			seg = url.PathEscape(id)
		}
		out = append(out, seg)
	}
	return strings.Join(out, "/")
}

// fuzzRoute is one route of a fuzz table, by method and echo template.
type fuzzRoute struct{ method, path string }

// fuzzWriteRoutes are the routes that take a body or change something.
// The order is fixed: seeds name routes by index. Append, never reorder;
// TestFuzzTablesCoverEveryRoute fails when a route is missing.
var fuzzWriteRoutes = []fuzzRoute{
	{http.MethodPost, "/v1/sites"},                               // 0
	{http.MethodPost, "/v1/pools"},                               // 1
	{http.MethodPost, "/v1/nodes"},                               // 2
	{http.MethodPost, "/v1/nodes/:id/cordon"},                    // 3
	{http.MethodPost, "/v1/nodes/:id/uncordon"},                  // 4
	{http.MethodPost, "/v1/nodes/:id/taint"},                     // 5
	{http.MethodPost, "/v1/nodes/:id/untaint"},                   // 6
	{http.MethodPost, "/v1/devices/:id/quarantine"},              // 7
	{http.MethodPost, "/v1/devices/:id/unquarantine"},            // 8
	{http.MethodPut, "/v1/devices/:id/health"},                   // 9
	{http.MethodPut, "/v1/gpus/:id/mode"},                        // 10
	{http.MethodPut, "/v1/tenants/:tenant/quotas/:resource"},     // 11
	{http.MethodPost, "/v1/reservations"},                        // 12
	{http.MethodPost, "/v1/reservations/:id/extend"},             // 13
	{http.MethodPost, "/v1/reservations/:id/release"},            // 14
	{http.MethodPost, "/v1/reservations/:id/cancel"},             // 15
	{http.MethodPost, "/v1/tokens"},                              // 16
	{http.MethodDelete, "/v1/tokens/:id"},                        // 17
	{http.MethodPost, "/v1/webhook-endpoints"},                   // 18
	{http.MethodPatch, "/v1/webhook-endpoints/:id"},              // 19
	{http.MethodDelete, "/v1/webhook-endpoints/:id"},             // 20
	{http.MethodPost, "/v1/webhook-endpoints/:id/rotate-secret"}, // 21
	{http.MethodPost, "/v1/webhook-endpoints/:id/recover"},       // 22
	{http.MethodPost, "/v1/nodes/:id/join"},                      // 23
	{http.MethodPost, "/v1/nodes/:id/drain"},                     // 24
	{http.MethodPost, "/v1/nodes/:id/undrain"},                   // 25
	{http.MethodPost, "/v1/nodes/:id/release"},                   // 26
	{http.MethodPost, "/v1/nodes/:id/retire"},                    // 27
	{http.MethodPost, "/v1/commands"},                            // 28
	{http.MethodPost, "/v1/instances"},                           // 29
	{http.MethodDelete, "/v1/instances/:id"},                     // 30
	{http.MethodPost, "/v1/nodes/:id/join-tokens"},               // 31
	{http.MethodDelete, "/v1/nodes/:id/credentials/:cid"},        // 32
	{http.MethodDelete, "/v1/nodes/:id/join-tokens/:tid"},        // 33
	{http.MethodPost, "/v1/events/stream-tickets"},               // 34
	{http.MethodPatch, "/v1/sites/:id"},                          // 35
	{http.MethodPost, "/v1/priority-classes"},                    // 36
	{http.MethodPut, "/v1/tenants/:tenant/priority-classes"},     // 37
	{http.MethodPut, "/v1/tenants/:tenant/fair-share"},           // 38
	{http.MethodPost, "/v1/tenants/:tenant/suspend"},             // 39
	{http.MethodPost, "/v1/tenants/:tenant/resume"},              // 40
}

// fuzzReadRoutes are the GET routes under /v1, in fixed order as above.
var fuzzReadRoutes = []fuzzRoute{
	{http.MethodGet, "/v1/reservations"},                   // 0
	{http.MethodGet, "/v1/reservations/:id"},               // 1
	{http.MethodGet, "/v1/nodes"},                          // 2
	{http.MethodGet, "/v1/nodes/:id"},                      // 3
	{http.MethodGet, "/v1/pools/:id/capacity"},             // 4
	{http.MethodGet, "/v1/devices/:id/holders"},            // 5
	{http.MethodGet, "/v1/usage-windows"},                  // 6
	{http.MethodGet, "/v1/events"},                         // 7
	{http.MethodGet, "/v1/events/stream"},                  // 8
	{http.MethodGet, "/v1/webhook-endpoints"},              // 9
	{http.MethodGet, "/v1/webhook-endpoints/:id"},          // 10
	{http.MethodGet, "/v1/webhook-endpoints/:id/attempts"}, // 11
	{http.MethodGet, "/v1/tokens/:id"},                     // 12
	{http.MethodGet, "/v1/whoami"},                         // 13
	{http.MethodGet, "/v1/commands/:id"},                   // 14
	{http.MethodGet, "/v1/instances/:id"},                  // 15
	{http.MethodGet, "/v1/nodes/:id/credentials"},          // 16
	{http.MethodGet, "/v1/sites"},                          // 17
	{http.MethodGet, "/v1/sites/:id"},                      // 18
	{http.MethodGet, "/v1/pools"},                          // 19
	{http.MethodGet, "/v1/pools/:id"},                      // 20
	{http.MethodGet, "/v1/tenants"},                        // 21
	{http.MethodGet, "/v1/tenants/:tenant"},                // 22
	{http.MethodGet, "/v1/tenants/:tenant/quotas"},         // 23
	{http.MethodGet, "/v1/tokens"},                         // 24
	// Priority classes.
	{http.MethodGet, "/v1/priority-classes"},                 // 25
	{http.MethodGet, "/v1/priority-classes/:name"},           // 26
	{http.MethodGet, "/v1/tenants/:tenant/priority-classes"}, // 27
	// Fair share.
	{http.MethodGet, "/v1/tenants/:tenant/fair-share"}, // 28
	// A reservation's instances.
	{http.MethodGet, "/v1/instances"}, // 29
}

// The fuzz tables must name every /v1 route the server registers, so a
// new route is fuzzed from the day it lands.
func TestFuzzTablesCoverEveryRoute(t *testing.T) {
	t.Parallel()
	s := newAPIServer(t, time.Second)
	var missing []string
	for _, r := range s.e.Routes() {
		if r.Method == echo.RouteNotFound || !strings.HasPrefix(r.Path, "/v1/") {
			continue
		}
		table := fuzzWriteRoutes
		if r.Method == http.MethodGet {
			table = fuzzReadRoutes
		}
		if !slices.Contains(table, fuzzRoute{r.Method, r.Path}) {
			missing = append(missing, r.Method+" "+r.Path)
		}
	}
	require.Empty(t, missing, "routes no fuzz table covers: add them to fuzzWriteRoutes or fuzzReadRoutes")
}

// FuzzRequestBodies sends fuzzed bodies and headers to every write route.
// route picks the route and pick the real id for its path (both modulo
// their table); flags bits: 0-1 the caller (operator,
// member, viewer, or header as a made-up token), 2 Idempotency-Key:
// header, 3 If-Match: header, 4-5 the content type, 6 X-Request-Id:
// header, 7 pathID as the path id instead of a real one.
func FuzzRequestBodies(f *testing.F) {
	fl := newFuzzFleet(f)
	contentTypes := []string{"application/json", "", "text/plain", "application/merge-patch+json; charset=utf-8"}
	f.Fuzz(func(t *testing.T, route, pick, flags uint8, pathID string, header string, body []byte) {
		rt := fuzzWriteRoutes[int(route)%len(fuzzWriteRoutes)]
		target := fl.pathFor(rt.path, int(pick), flags&0x80 != 0, pathID)
		req, err := rawRequest(rt.method, target, body)
		if err != nil {
			return // the server refuses it before any handler
		}
		if ct := contentTypes[flags>>4&3]; ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		headerOK := validHeaderValue(header)
		if tok := fl.token(flags, header); headerOK || flags&3 != 3 {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if headerOK {
			if flags&0x04 != 0 {
				req.Header.Set("Idempotency-Key", header)
			}
			if flags&0x08 != 0 {
				req.Header.Set("If-Match", header)
			}
			if flags&0x40 != 0 {
				req.Header.Set(echo.HeaderXRequestID, header)
			}
		}
		r := fl.serve(req, nil, 5*time.Second)
		excuse(t, req, r)
		fl.checkResponse(t, r, fmt.Sprintf("%s %s (flags %#02x, header %q) body %q", rt.method, target, flags, header, body))
	})
}

// FuzzQueryParameters sends fuzzed query parameters and path ids to every
// GET route. route, pick and flags bits 0-1 and 7 are as in
// FuzzRequestBodies;
// flag bit 2 sends after even when empty (the stream's "from the start");
// bit 3 sends the query raw, unescaped, as a client that builds URLs by
// hand would; bit 4 sends header as Last-Event-ID.
func FuzzQueryParameters(f *testing.F) {
	fl := newFuzzFleet(f)
	fl.runBroker(f)
	f.Fuzz(func(t *testing.T, route, pick, flags uint8, pathID, header,
		cursor, limit, after, types, minPosition, at, state, pool, tenant string) {
		rt := fuzzReadRoutes[int(route)%len(fuzzReadRoutes)]
		target := fl.pathFor(rt.path, int(pick), flags&0x80 != 0, pathID)
		params := []struct{ name, value string }{
			{"cursor", cursor}, {"limit", limit}, {"after", after}, {"types", types}, {"minPosition", minPosition},
			{"at", at}, {"state", state}, {"pool", pool}, {"tenant", tenant}, {"reservation", pathID},
		}
		var raw []string
		q := url.Values{}
		for _, p := range params {
			if p.value == "" && !(p.name == "after" && flags&0x04 != 0) {
				continue
			}
			q.Add(p.name, p.value)
			raw = append(raw, p.name+"="+p.value)
		}
		query := q.Encode()
		if flags&0x08 != 0 {
			query = strings.Join(raw, "&")
		}
		if query != "" {
			target += "?" + query
		}
		req, err := rawRequest(rt.method, target, nil)
		if err != nil {
			return // the server refuses it before any handler
		}
		headerOK := validHeaderValue(header)
		if tok := fl.token(flags, header); headerOK || flags&3 != 3 {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		if headerOK && flags&0x10 != 0 {
			req.Header.Set("Last-Event-ID", header)
		}
		r := fl.serve(req, nil, 5*time.Second)
		if r.timedOut {
			t.Fatalf("GET %s: the stream wrote nothing for 5 s", target)
		}
		excuse(t, req, r)
		fl.checkResponse(t, r, fmt.Sprintf("GET %s (flags %#02x, header %q)", target, flags, header))
	})
}
