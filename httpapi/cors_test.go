package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/httpapi"
)

const consoleOrigin = "https://console.example.com"

// corsRequest sends method path with an Origin header and, for a
// preflight, the Access-Control-Request-* headers.
func (s *testServer) corsRequest(t *testing.T, method, path, origin, token string, preflight bool) response {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, nil)
	require.NoError(t, err)
	req.Header.Set("Origin", origin)
	if preflight {
		req.Header.Set("Access-Control-Request-Method", http.MethodPost)
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,idempotency-key")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return s.do(t, req)
}

// With an allow-list, pages of those exact origins may call the API: the
// preflight allows the API's request headers, and responses (errors
// included) expose the headers a client acts on. Any other origin gets no
// CORS header, so the browser keeps the response from the page.
func TestCORSAllowsExactlyTheConfiguredOrigins(t *testing.T) {
	t.Parallel()
	s := setupWith(t, func(d *httpapi.Deps) {
		d.CORSOrigins = []string{consoleOrigin, "http://localhost:3000"}
		d.RateLimit, d.RateBurst = 100, 100
	})

	pre := s.corsRequest(t, http.MethodOptions, "/v1/reservations", consoleOrigin, "", true)
	require.Equal(t, http.StatusNoContent, pre.status, "body: %s", pre.body)
	require.Equal(t, consoleOrigin, pre.header.Get("Access-Control-Allow-Origin"))
	require.Empty(t, pre.header.Get("Access-Control-Allow-Credentials"), "bearer tokens, never cookies")
	allowHeaders := strings.ToLower(pre.header.Get("Access-Control-Allow-Headers"))
	for _, h := range []string{"authorization", "content-type", "idempotency-key", "if-match", "last-event-id"} {
		require.Contains(t, allowHeaders, h)
	}
	allowMethods := pre.header.Get("Access-Control-Allow-Methods")
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		require.Contains(t, allowMethods, m)
	}
	require.Equal(t, "600", pre.header.Get("Access-Control-Max-Age"))

	for _, c := range []struct {
		token  string
		status int
	}{{s.operator, http.StatusOK}, {"", http.StatusUnauthorized}} {
		r := s.corsRequest(t, http.MethodGet, "/v1/whoami", consoleOrigin, c.token, false)
		require.Equal(t, c.status, r.status, "body: %s", r.body)
		require.Equal(t, consoleOrigin, r.header.Get("Access-Control-Allow-Origin"), "errors are readable by the page too")
		require.Contains(t, r.header.Values("Vary"), "Origin")
		expose := r.header.Get("Access-Control-Expose-Headers")
		for _, h := range []string{"ETag", "Location", "Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "X-Request-Id"} {
			require.Contains(t, expose, h)
		}
	}
	r := s.corsRequest(t, http.MethodGet, "/v1/whoami", "http://localhost:3000", s.operator, false)
	require.Equal(t, "http://localhost:3000", r.header.Get("Access-Control-Allow-Origin"))

	// Exact origins: no subdomain, scheme, port or prefix variant matches.
	for _, origin := range []string{"https://evil.example.com", "http://console.example.com", "https://console.example.com:8443",
		"https://console.example.com.evil.example", "https://a.console.example.com", "null"} {
		pre := s.corsRequest(t, http.MethodOptions, "/v1/reservations", origin, "", true)
		require.Empty(t, pre.header.Get("Access-Control-Allow-Origin"), "preflight from %s", origin)
		require.Empty(t, pre.header.Get("Access-Control-Allow-Headers"), "preflight from %s", origin)
		r := s.corsRequest(t, http.MethodGet, "/v1/whoami", origin, s.operator, false)
		require.Equal(t, http.StatusOK, r.status, "CORS is the browser's check; the server still answers")
		require.Empty(t, r.header.Get("Access-Control-Allow-Origin"), "GET from %s", origin)
		require.Empty(t, r.header.Get("Access-Control-Expose-Headers"), "GET from %s", origin)
	}
}

// Without an allow-list (the default) there is no CORS at all.
func TestCORSIsOffByDefault(t *testing.T) {
	t.Parallel()
	s := setup(t)
	r := s.corsRequest(t, http.MethodGet, "/v1/whoami", consoleOrigin, s.operator, false)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	pre := s.corsRequest(t, http.MethodOptions, "/v1/whoami", consoleOrigin, "", true)
	for _, res := range []response{r, pre} {
		for name := range res.header {
			require.False(t, strings.HasPrefix(name, "Access-Control-"), "header %s", name)
		}
	}
}
