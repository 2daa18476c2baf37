package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/queries"
)

func TestHealthz(t *testing.T) {
	t.Parallel()
	s := setup(t)
	r := s.call(t, http.MethodGet, "/healthz", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `{"status":"ok"}`, string(r.body))
}

func TestReadyzReportsDatabaseAndClockSkew(t *testing.T) {
	t.Parallel()
	s := setup(t)

	r := s.call(t, http.MethodGet, "/readyz", s.operator, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var body httpapi.Readiness
	r.decode(t, &body)
	require.Equal(t, httpapi.CheckOK, body.Status)
	require.Equal(t, httpapi.CheckOK, body.Checks["database"].Status)
	skew := body.Checks["clock.skew"]
	require.Equal(t, httpapi.CheckOK, skew.Status)
	require.NotNil(t, skew.Seconds)
	require.Less(t, *skew.Seconds, clock.MaxSkew.Seconds())
	require.Nil(t, body.Error)

	// compute_now() jumps an hour ahead of the process's clock: still
	// serving, but degraded, and the skew is reported.
	s.pg.AdvanceSimClock(t, time.Hour)
	r = s.call(t, http.MethodGet, "/readyz", s.operator, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	r.decode(t, &body)
	require.Equal(t, httpapi.CheckDegraded, body.Status)
	require.Equal(t, httpapi.CheckOK, body.Checks["database"].Status)
	skew = body.Checks["clock.skew"]
	require.Equal(t, httpapi.CheckDegraded, skew.Status)
	require.NotNil(t, skew.Seconds)
	require.InDelta(t, -3600, *skew.Seconds, 1)
}

func TestReadyzUnavailableWithoutDatabase(t *testing.T) {
	t.Parallel()
	tdb := pgtest.New(t)
	// A pool of its own, closed: every query on it fails.
	pool, err := pg.Connect(context.Background(), tdb.URL, pg.PoolOptions{})
	require.NoError(t, err)
	pool.Close()

	e := httpapi.New(httpapi.Deps{
		Pool: pool, Commands: commands.New(pool, commands.Config{}), Clock: clock.New(nil), Auth: authn.New(tdb.Pool, 0),
		Logger: slog.New(slog.DiscardHandler),
	})
	srv := httptest.NewServer(httpapi.InternalHandler(e)) // details without a token
	t.Cleanup(srv.Close)
	s := &testServer{url: srv.URL}

	r := s.call(t, http.MethodGet, "/readyz", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	var body httpapi.Readiness
	r.decode(t, &body)
	require.Equal(t, httpapi.CheckUnavailable, body.Status)
	require.Equal(t, httpapi.CheckUnavailable, body.Checks["database"].Status)
	require.Contains(t, body.Checks, "clock.skew")
	require.NotNil(t, body.Error)
	require.Equal(t, core.CodeUnavailable, body.Error.Code)
	require.Contains(t, body.Error.Message, "database")

	// Liveness does not depend on the database.
	require.Equal(t, http.StatusOK, s.call(t, http.MethodGet, "/healthz", "", nil).status)
}

func TestReadyzRunsExtraChecks(t *testing.T) {
	t.Parallel()
	tdb := pgtest.New(t)
	clk := clock.New(nil)
	_, err := clk.Sample(context.Background(), queries.New(tdb.Pool))
	require.NoError(t, err)
	lag := 42.0
	e := httpapi.New(httpapi.Deps{
		Pool: tdb.Pool, Commands: commands.New(tdb.Pool, commands.Config{}), Clock: clk, Auth: authn.New(tdb.Pool, 0), Logger: slog.New(slog.DiscardHandler),
		ReadyChecks: []httpapi.ReadyCheck{
			{Name: "outbox.lag", Run: func(context.Context) httpapi.CheckResult {
				return httpapi.CheckResult{Status: httpapi.CheckDegraded, Seconds: &lag}
			}},
		},
	})
	srv := httptest.NewServer(httpapi.InternalHandler(e))
	t.Cleanup(srv.Close)

	r := (&testServer{url: srv.URL}).call(t, http.MethodGet, "/readyz", "", nil)
	require.Equal(t, http.StatusOK, r.status, "a non-critical check only degrades")
	var body httpapi.Readiness
	r.decode(t, &body)
	require.Equal(t, httpapi.CheckDegraded, body.Status)
	require.Equal(t, httpapi.CheckResult{Status: httpapi.CheckDegraded, Seconds: &lag}, body.Checks["outbox.lag"])
	require.Len(t, body.Checks, 3)
}

func TestMetricsCountRequestsByRouteAndStatus(t *testing.T) {
	t.Parallel()
	s := setup(t)
	s.call(t, http.MethodGet, "/healthz", "", nil)
	s.call(t, http.MethodGet, "/healthz", "", nil)
	id, _ := s.tokenFor(t, "acme", "ci", core.RoleViewer)
	s.call(t, http.MethodGet, "/v1/tokens/"+id, s.operator, nil)
	s.call(t, http.MethodGet, "/nope", "", nil)

	r := s.call(t, http.MethodGet, "/metrics", s.operator, nil)
	require.Equal(t, http.StatusOK, r.status)
	text := string(r.body)
	require.Contains(t, text, `compute_http_requests_total{method="GET",route="/healthz",status="200"} 2`)
	require.Contains(t, text, `compute_http_requests_total{method="POST",route="/v1/tokens",status="201"} 1`)
	// The route pattern, never the raw path with its id.
	require.Contains(t, text, `compute_http_requests_total{method="GET",route="/v1/tokens/:id",status="200"} 1`)
	require.NotContains(t, text, id)
	require.Contains(t, text, `compute_http_requests_total{method="GET",route="unmatched",status="404"} 1`)
	require.Contains(t, text, `compute_http_request_duration_seconds_bucket{method="GET",route="/healthz",status="200",le="+Inf"} 2`)
}

func TestRequestIDIsEchoedAndLogged(t *testing.T) {
	t.Parallel()
	s := setup(t)

	r := s.call(t, http.MethodGet, "/healthz", "", nil)
	rid := r.header.Get(echo.HeaderXRequestID)
	require.NotEmpty(t, rid)
	other := s.call(t, http.MethodGet, "/healthz", "", nil).header.Get(echo.HeaderXRequestID)
	require.NotEqual(t, rid, other, "each request gets its own id")

	// A well-formed id from the caller is kept; a hostile one is replaced.
	req, err := http.NewRequest(http.MethodGet, s.url+"/v1/whoami", nil)
	require.NoError(t, err)
	req.Header.Set(echo.HeaderXRequestID, "trace-1234.abc")
	r = s.do(t, req)
	require.Equal(t, "trace-1234.abc", r.header.Get(echo.HeaderXRequestID))

	req.Header.Set(echo.HeaderXRequestID, strings.Repeat("x", 200))
	r = s.do(t, req)
	require.NotEqual(t, strings.Repeat("x", 200), r.header.Get(echo.HeaderXRequestID))
	require.NotEmpty(t, r.header.Get(echo.HeaderXRequestID))

	// The access log line has the id, status, route and the error code.
	lines := logLines(t, s.logs.String(), "trace-1234.abc")
	require.Len(t, lines, 1, "%v", lines)
	l := lines[0]
	require.Equal(t, "http request", l["msg"])
	require.Equal(t, "GET", l["method"])
	require.Equal(t, "/v1/whoami", l["path"])
	require.EqualValues(t, 401, l["status"])
	require.Equal(t, string(core.CodeUnauthenticated), l["code"])
	require.Contains(t, l, "latency")
}

func TestOpenAPIIsServed(t *testing.T) {
	t.Parallel()
	s := setup(t)
	r := s.call(t, http.MethodGet, "/openapi.yaml", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "application/yaml", r.header.Get("Content-Type"))
	require.True(t, strings.HasPrefix(string(r.body), "openapi: 3.1"), "%.40s", r.body)
}

// A /readyz that answers 503 through an outage is not an error line per
// probe: its checks say why, once per outage.
func TestNotReadyIsNoErrorLinePerProbe(t *testing.T) {
	t.Parallel()
	tdb := pgtest.New(t)
	clk := clock.New(nil)
	_, err := clk.Sample(context.Background(), queries.New(tdb.Pool))
	require.NoError(t, err)
	var logs testenv.LogBuffer
	e := httpapi.New(httpapi.Deps{
		Pool: tdb.Pool, Commands: commands.New(tdb.Pool, commands.Config{}), Clock: clk, Auth: authn.New(tdb.Pool, 0),
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		ReadyChecks: []httpapi.ReadyCheck{{Name: "outbox.lag", Critical: true, Run: func(context.Context) httpapi.CheckResult {
			return httpapi.CheckResult{Status: httpapi.CheckUnavailable}
		}}},
	})
	srv := httptest.NewServer(httpapi.InternalHandler(e))
	t.Cleanup(srv.Close)
	for range 3 {
		r := (&testServer{url: srv.URL}).call(t, http.MethodGet, "/readyz", "", nil)
		require.Equal(t, http.StatusServiceUnavailable, r.status)
	}
	require.Equal(t, []string{"DEBUG http request", "DEBUG http request", "DEBUG http request"}, logs.LevelsAndMessages(t))
}
