package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// serveWith serves h with NewServer(c) on a loopback port and returns its
// base URL; the server is closed when the test ends.
func serveWith(t *testing.T, h http.Handler, c httpapi.ServerConfig) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := httpapi.NewServer("", h, c)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		require.ErrorIs(t, <-done, http.ErrServerClosed)
	})
	return "http://" + ln.Addr().String()
}

// on returns a copy of s that sends its calls to url.
func (s *testServer) on(url string) *testServer {
	c := *s
	c.url = url
	return &c
}

// /metrics describes the whole fleet's traffic: it needs the listener's
// metrics token or an operator token, except on the internal listener.
func TestMetricsNeedATokenOrTheInternalListener(t *testing.T) {
	t.Parallel()
	s := setup(t)
	_, member := s.tokenFor(t, "acme", "member@acme", core.RoleMember)
	pub := s.on(serveWith(t, s.echo, httpapi.ServerConfig{MetricsToken: "bc_metrics-scraper"}))

	r := pub.call(t, http.MethodGet, "/metrics", "", nil)
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Equal(t, core.CodeUnauthenticated, r.errorBody(t).Code)
	r = pub.call(t, http.MethodGet, "/metrics", "bc_not-the-metrics-token", nil)
	require.Equal(t, http.StatusUnauthorized, r.status)
	r = pub.call(t, http.MethodGet, "/metrics", member, nil)
	require.Equal(t, http.StatusForbidden, r.status)
	require.Equal(t, core.CodePermissionDenied, r.errorBody(t).Code)
	for _, tok := range []string{"bc_metrics-scraper", s.operator} {
		r = pub.call(t, http.MethodGet, "/metrics", tok, nil)
		require.Equal(t, http.StatusOK, r.status)
		require.Contains(t, string(r.body), "compute_http_requests_total")
	}

	// A server without a metrics token (httptest here) takes operators only.
	require.Equal(t, http.StatusUnauthorized, s.call(t, http.MethodGet, "/metrics", "bc_metrics-scraper", nil).status)

	// The internal listener serves the operations routes without a token,
	// and nothing else.
	internal := httptest.NewServer(httpapi.InternalHandler(s.echo))
	t.Cleanup(internal.Close)
	in := s.on(internal.URL)
	r = in.call(t, http.MethodGet, "/metrics", "", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Contains(t, string(r.body), "compute_http_requests_total")
	require.Equal(t, http.StatusOK, in.call(t, http.MethodGet, "/healthz", "", nil).status)
	r = in.call(t, http.MethodGet, "/v1/whoami", s.operator, nil)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, core.CodeNotFound, r.errorBody(t).Code)
}

// /readyz tells anyone ready or not; the checks only to an operator token
// and on the internal listener.
func TestReadyzDetailsNeedAnOperatorOrTheInternalListener(t *testing.T) {
	t.Parallel()
	s := setup(t)
	_, member := s.tokenFor(t, "acme", "member@acme", core.RoleMember)
	for _, tok := range []string{"", member, "bc_unknown"} {
		r := s.call(t, http.MethodGet, "/readyz", tok, nil)
		require.Equal(t, http.StatusOK, r.status, "token %q", tok)
		require.JSONEq(t, `{"status":"ok"}`, string(r.body), "token %q", tok)
		require.Empty(t, r.header.Get("WWW-Authenticate"), "a probe with a bad token is not a 401")
	}
	var body httpapi.Readiness
	s.call(t, http.MethodGet, "/readyz", s.operator, nil).decode(t, &body)
	require.Contains(t, body.Checks, "database")
	require.Contains(t, body.Checks, "clock.skew")

	internal := httptest.NewServer(httpapi.InternalHandler(s.echo))
	t.Cleanup(internal.Close)
	body = httpapi.Readiness{}
	s.on(internal.URL).call(t, http.MethodGet, "/readyz", "", nil).decode(t, &body)
	require.Contains(t, body.Checks, "database")
}

// Not ready, to an anonymous probe: 503 and UNAVAILABLE, without saying
// which check failed.
func TestReadyzUnavailableSaysNoMoreWithoutAToken(t *testing.T) {
	t.Parallel()
	tdb := pgtest.New(t)
	pool, err := pg.Connect(context.Background(), tdb.URL, pg.PoolOptions{})
	require.NoError(t, err)
	pool.Close()
	e := httpapi.New(httpapi.Deps{
		Pool: pool, Commands: commands.New(pool, commands.Config{}), Clock: clock.New(nil), Auth: authn.New(tdb.Pool, 0), Logger: slog.New(slog.DiscardHandler),
	})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	r := (&testServer{url: srv.URL}).call(t, http.MethodGet, "/readyz", "", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	var body map[string]any
	require.NoError(t, json.Unmarshal(r.body, &body))
	require.Equal(t, map[string]any{"status": "unavailable",
		"error": map[string]any{"code": "UNAVAILABLE", "message": "not ready"}}, body)
}

// ListenAndServe starts the internal listener next to the main one and
// Shutdown stops both.
func TestServerRunsTheInternalListener(t *testing.T) {
	t.Parallel()
	s := setup(t)
	addr, internalAddr := freeLoopbackAddr(t), freeLoopbackAddr(t)
	srv := httpapi.NewServer(addr, s.echo, httpapi.ServerConfig{InternalAddr: internalAddr})
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe() }()
	var r response
	require.Eventually(t, func() bool {
		res, err := http.Get("http://" + internalAddr + "/metrics")
		if err != nil {
			return false
		}
		_ = res.Body.Close()
		r.status = res.StatusCode
		return true
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, http.StatusOK, r.status, "no token on the internal listener")
	require.Equal(t, http.StatusUnauthorized, s.on("http://"+addr).call(t, http.MethodGet, "/metrics", "", nil).status)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx))
	require.ErrorIs(t, <-done, http.ErrServerClosed)
	_, err := http.Get("http://" + internalAddr + "/healthz")
	require.Error(t, err, "the internal listener is closed too")
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// A client address that keeps failing authentication is throttled: 429
// RATE_LIMITED with Retry-After, before any further lookup. A token
// already known good (cached) still gets in from that address, so one
// bad client behind a shared proxy does not lock everyone out.
func TestFailedAuthenticationsAreRateLimitedPerClient(t *testing.T) {
	t.Parallel()
	s := setupWith(t, func(d *httpapi.Deps) {
		d.Auth = authn.New(d.Pool, authn.CacheTTL)
		d.AuthFailureBurst = 3
		d.AuthFailureRate = 0.001 // one attempt back every ~17 minutes
	})
	require.Equal(t, http.StatusOK, s.call(t, http.MethodGet, "/v1/whoami", s.operator, nil).status) // now cached

	for i := range 3 {
		r := s.call(t, http.MethodGet, "/v1/whoami", "bc_guess-"+strconv.Itoa(i), nil)
		require.Equal(t, http.StatusUnauthorized, r.status, "failure %d is within the burst", i+1)
	}
	for _, tok := range []string{"bc_guess-3", "bc_guess-0"} {
		r := s.call(t, http.MethodGet, "/v1/whoami", tok, nil)
		require.Equal(t, http.StatusTooManyRequests, r.status, "body: %s", r.body)
		require.Equal(t, core.CodeRateLimited, r.errorBody(t).Code)
		secs, err := strconv.Atoi(r.header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After is whole seconds")
		require.Greater(t, secs, 60)
	}
	// Throttled, but the cached operator token still works; a valid token
	// the server has not seen yet waits like everyone else.
	r := s.call(t, http.MethodPost, "/v1/tokens", s.operator,
		map[string]string{"tenant": "acme", "identity": "ci", "role": string(core.RoleViewer)})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var created struct{ Token string }
	r.decode(t, &created)
	require.Equal(t, http.StatusTooManyRequests, s.call(t, http.MethodGet, "/v1/whoami", created.Token, nil).status)

	// Failures are counted per address: another client is not affected.
	req, err := http.NewRequest(http.MethodGet, "/v1/whoami", nil)
	require.NoError(t, err)
	req.RemoteAddr = "192.0.2.7:4242"
	req.Header.Set("Authorization", "Bearer "+created.Token)
	rec := httptest.NewRecorder()
	s.echo.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, "body: %s", rec.Body)
}

// Behind a trusted load balancer every request has the balancer's
// address: failures count against the client it forwarded
// (X-Forwarded-For), so one client guessing tokens throttles itself, not
// everyone behind the balancer. From an untrusted peer the header is not
// believed: a guesser cannot spread its failures over invented addresses.
func TestFailedAuthenticationsBehindATrustedProxyCountPerClient(t *testing.T) {
	t.Parallel()
	proxies, err := authn.NewClientAddresses([]string{"10.0.0.0/8"})
	require.NoError(t, err)
	s := setupWith(t, func(d *httpapi.Deps) {
		d.Auth = authn.New(d.Pool, authn.CacheTTL)
		d.AuthFailureBurst = 3
		d.AuthFailureRate = 0.001
		d.ClientAddresses = proxies
	})
	call := func(peer, forwardedFor, token string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "/v1/whoami", nil)
		require.NoError(t, err)
		req.RemoteAddr = peer
		if forwardedFor != "" {
			req.Header.Set("X-Forwarded-For", forwardedFor)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		s.echo.ServeHTTP(rec, req)
		return rec.Code
	}
	r := s.call(t, http.MethodPost, "/v1/tokens", s.operator,
		map[string]string{"tenant": "acme", "identity": "ci", "role": string(core.RoleViewer)})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var created struct{ Token string }
	r.decode(t, &created)

	for i := range 3 {
		require.Equal(t, http.StatusUnauthorized, call("10.0.0.1:4000", "203.0.113.9", "bc_guess-"+strconv.Itoa(i)))
	}
	require.Equal(t, http.StatusTooManyRequests, call("10.0.0.1:4000", "203.0.113.9", "bc_guess-3"),
		"the guessing client is throttled")
	require.Equal(t, http.StatusOK, call("10.0.0.1:4000", "203.0.113.10", created.Token),
		"another client behind the same balancer, with a token this process has not cached, is not")

	for i := range 3 {
		require.Equal(t, http.StatusUnauthorized, call("198.51.100.7:4000", "203.0.113.1"+strconv.Itoa(i), "bc_guess-"+strconv.Itoa(i)))
	}
	require.Equal(t, http.StatusTooManyRequests, call("198.51.100.7:4000", "203.0.113.99", "bc_guess-3"),
		"an untrusted peer's X-Forwarded-For is not believed")
}

// Guessing join tokens is throttled like guessing API tokens: past the
// burst, a client address gets 429 before any lookup, and a good join
// token from it waits too.
func TestFailedJoinTokensAreRateLimitedPerClient(t *testing.T) {
	t.Parallel()
	s := setupWith(t, func(d *httpapi.Deps) {
		d.AuthFailureBurst = 3
		d.AuthFailureRate = 0.001
	}, func(r httpapi.Router) { httpapi.NodeRoutes(r.Deps.Commands)(r) })
	for i := range 3 {
		r := s.call(t, http.MethodPost, "/v1/nodes/n9/join", "bcj_guess-"+strconv.Itoa(i), map[string]any{})
		require.Equal(t, http.StatusUnauthorized, r.status, "failure %d is within the burst: %s", i+1, r.body)
	}
	r := s.call(t, http.MethodPost, "/v1/nodes/n9/join", "bcj_guess-3", map[string]any{})
	require.Equal(t, http.StatusTooManyRequests, r.status, "body: %s", r.body)
	require.Equal(t, core.CodeRateLimited, r.errorBody(t).Code)
	require.NotEmpty(t, r.header.Get("Retry-After"))
}
