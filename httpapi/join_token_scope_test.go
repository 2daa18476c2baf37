package httpapi_test

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// A join token is scoped to joining one node, and to nothing else: a token
// issued for node A cannot join node B, nor call any other route (every
// /v1 route the server has, operator or not, and /metrics); it joins A
// once and never again; it expires; and an operator can revoke it, through
// authz_changes, before it is used. The daemon's join needs no operator
// token at all.
func TestJoinTokenScopedToOneNode(t *testing.T) {
	t.Parallel()
	s := newAPIServer(t, time.Second)
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/sites", s.operator, map[string]any{"id": "fra1", "name": "Frankfurt 1"}, nil)
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/pools", s.operator,
		map[string]any{"id": "metal", "siteId": "fra1", "kind": "bare-metal"}, nil)
	issue := func(node string, body any) joinTokenJSON {
		t.Helper()
		var jt joinTokenJSON
		s.must(t, http.StatusCreated, http.MethodPost, "/v1/nodes/"+node+"/join-tokens", s.operator, body, &jt)
		return jt
	}
	join := func(node, token string) apiResult {
		t.Helper()
		return s.call(t, http.MethodPost, "/v1/nodes/"+node+"/join", token, joinBody)
	}
	changes := func(tokenID string) []string {
		t.Helper()
		rows, err := s.pg.Pool.Query(context.Background(),
			"SELECT change FROM authz_changes WHERE token_id = $1 ORDER BY txid, seq", tokenID)
		require.NoError(t, err)
		var out []string
		for rows.Next() {
			var c string
			require.NoError(t, rows.Scan(&c))
			out = append(out, c)
		}
		require.NoError(t, rows.Err())
		return out
	}

	a := issue("node-a", nil)
	require.Equal(t, []string{"created"}, changes(a.ID))

	// Not another node: refused, and nothing registered.
	require.Equal(t, http.StatusUnauthorized, join("node-b", a.Token).status)
	s.must(t, http.StatusNotFound, http.MethodGet, "/v1/nodes/node-b", s.operator, nil, nil)

	// No other route, whatever its role: the token is not an API token.
	param := regexp.MustCompile(`:[a-z]+`)
	for _, r := range append(append([]fuzzRoute{}, fuzzWriteRoutes...), fuzzReadRoutes...) {
		if r.path == "/v1/nodes/:id/join" {
			continue
		}
		target := param.ReplaceAllString(r.path, "node-a")
		var body any
		if r.method != http.MethodGet {
			body = map[string]any{}
		}
		res := s.call(t, r.method, target, a.Token, body)
		require.Equal(t, http.StatusUnauthorized, res.status, "%s %s with a join token: %s", r.method, target, res.body)
	}
	res := s.call(t, http.MethodGet, "/metrics", a.Token, nil)
	require.NotEqual(t, http.StatusOK, res.status, "GET /metrics with a join token")

	// Its own node, without any operator token: once.
	var joined joinedJSON
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/nodes/node-a/join", a.Token, joinBody, &joined)
	node, _, err := s.h.NodeSessions().AuthenticateNodeCredential(context.Background(), joined.Token)
	require.NoError(t, err)
	require.Equal(t, "node-a", node)
	require.Equal(t, http.StatusUnauthorized, join("node-a", a.Token).status, "a second use")
	require.Equal(t, []string{"created", "revoked"}, changes(a.ID), "used up, the token is revoked")

	// It expires.
	short := issue("node-c", map[string]any{"ttlSeconds": 60})
	s.pg.AdvanceSimClock(t, time.Minute)
	require.Equal(t, http.StatusUnauthorized, join("node-c", short.Token).status, "expired")

	// It can be revoked before it is used (operators only; retried, nothing
	// changes; another node's path does not find it), through authz_changes.
	r := issue("node-d", nil)
	var created struct{ Token string }
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/tokens", s.operator,
		map[string]string{"tenant": "acme", "identity": "bob@acme", "role": string(core.RoleMember)}, &created)
	member := created.Token
	s.must(t, http.StatusForbidden, http.MethodDelete, "/v1/nodes/node-d/join-tokens/"+r.ID, member, nil, nil)
	s.must(t, http.StatusNotFound, http.MethodDelete, "/v1/nodes/node-a/join-tokens/"+r.ID, s.operator, nil, nil)
	s.must(t, http.StatusNoContent, http.MethodDelete, "/v1/nodes/node-d/join-tokens/"+r.ID, s.operator, nil, nil)
	s.must(t, http.StatusNoContent, http.MethodDelete, "/v1/nodes/node-d/join-tokens/"+r.ID, s.operator, nil, nil)
	require.Equal(t, []string{"created", "revoked"}, changes(r.ID))
	require.Equal(t, http.StatusUnauthorized, join("node-d", r.Token).status, "revoked")
	s.must(t, http.StatusNotFound, http.MethodGet, "/v1/nodes/node-d", s.operator, nil, nil)
}
