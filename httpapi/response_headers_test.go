package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
)

// Every answer of the API listener, errors and routes outside /v1
// included, carries the security headers: nosniff, a policy under which
// nothing of it runs, loads or is framed, DENY for browsers without
// frame-ancestors, and no referrer. Every answer under /v1 is no-store, the
// ones that show a secret once above all.
func TestResponsesCarryTheSecurityHeaders(t *testing.T) {
	t.Parallel()
	s := setup(t, webhookRoutes, func(r httpapi.Router) {
		httpapi.NodeRoutes(commands.New(r.Deps.Pool, commands.Config{}))(r)
	})
	_, member := s.tokenFor(t, "acme", "alice", core.RoleMember)

	check := func(what string, r response, status int, noStore bool) {
		t.Helper()
		require.Equal(t, status, r.status, "%s: %s", what, r.body)
		require.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"), what)
		require.Equal(t, httpapi.ContentSecurityPolicy, r.header.Get("Content-Security-Policy"), what)
		require.Contains(t, r.header.Get("Content-Security-Policy"), "frame-ancestors 'none'", what)
		require.NotContains(t, r.header.Get("Content-Security-Policy"), "unsafe-inline", what)
		require.Equal(t, "DENY", r.header.Get("X-Frame-Options"), what)
		require.Equal(t, "no-referrer", r.header.Get("Referrer-Policy"), what)
		if noStore {
			require.Equal(t, "no-store", r.header.Get("Cache-Control"), what)
		}
	}
	for _, c := range []struct {
		path, token string
		status      int
		noStore     bool
	}{
		{"/v1/whoami", s.operator, http.StatusOK, true},
		{"/v1/whoami", "", http.StatusUnauthorized, true},
		{"/v1/no-such-route", s.operator, http.StatusNotFound, true},
		{"/no-such-path", "", http.StatusNotFound, false},
		{"/healthz", "", http.StatusOK, false},
		{"/openapi.yaml", "", http.StatusOK, false},
	} {
		check("GET "+c.path, s.call(t, http.MethodGet, c.path, c.token, nil), c.status, c.noStore)
	}

	// The answers that show a secret once.
	secret := func(what string, r response, status int, field string) {
		t.Helper()
		check(what, r, status, true)
		var body map[string]any
		require.NoError(t, json.Unmarshal(r.body, &body), what)
		require.NotEmpty(t, body[field], "%s shows its secret in %q", what, field)
	}
	secret("create a token", s.call(t, http.MethodPost, "/v1/tokens", s.operator,
		map[string]string{"tenant": "acme", "identity": "bob", "role": "member"}), http.StatusCreated, "token")
	secret("issue a join token", s.call(t, http.MethodPost, "/v1/nodes/node-a/join-tokens", s.operator, nil),
		http.StatusCreated, "token")
	r := s.call(t, http.MethodPost, "/v1/webhook-endpoints", member, map[string]any{"url": "https://hooks.acme.example/in"})
	secret("register a webhook endpoint", r, http.StatusCreated, "secret")
	var endpoint webhookEndpointJSON
	r.decode(t, &endpoint)
	secret("rotate a webhook secret", s.call(t, http.MethodPost, "/v1/webhook-endpoints/"+endpoint.ID+"/rotate-secret", member, nil),
		http.StatusOK, "secret")
}
