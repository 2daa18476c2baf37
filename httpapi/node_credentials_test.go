package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
)

// nodeServer is a test server with the node routes (and more), a site
// "fra1" and a bare-metal pool "metal".
func nodeServer(t *testing.T, more ...httpapi.Routes) (*testServer, *commands.Handlers) {
	t.Helper()
	var svc *commands.Handlers
	s := setup(t, append([]httpapi.Routes{func(r httpapi.Router) {
		svc = commands.New(r.Deps.Pool, commands.Config{})
		httpapi.NodeRoutes(svc)(r)
	}}, more...)...)
	ctx, h := context.Background(), commands.New(s.pg.Pool, commands.Config{})
	op := core.Actor{Tenant: "ops", Identity: "root@ops", Role: core.RoleOperator}
	_, err := h.CreateSite(ctx, op, commands.CreateSite{ID: "fra1", Name: "Frankfurt 1"})
	require.NoError(t, err)
	_, err = h.CreatePool(ctx, op, commands.CreatePool{ID: "metal", SiteID: "fra1", Kind: commands.PoolBareMetal})
	require.NoError(t, err)
	return s, svc
}

type joinTokenJSON struct {
	ID        string    `json:"id"`
	NodeID    string    `json:"nodeId"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
}

type joinedJSON struct {
	NodeID       string `json:"nodeId"`
	CredentialID string `json:"credentialId"`
	Token        string `json:"token"`
}

var joinBody = map[string]any{"poolId": "metal", "vcpu": 8, "memoryMb": 1024, "diskGb": 10}

func (s *testServer) joinToken(t *testing.T, node string, body any) joinTokenJSON {
	t.Helper()
	r := s.call(t, http.MethodPost, "/v1/nodes/"+node+"/join-tokens", s.operator, body)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, "no-store", r.header.Get("Cache-Control"))
	var jt joinTokenJSON
	r.decode(t, &jt)
	return jt
}

func (s *testServer) requireJoinRefused(t *testing.T, node, token, why string) string {
	t.Helper()
	r := s.call(t, http.MethodPost, "/v1/nodes/"+node+"/join", token, joinBody)
	require.Equal(t, http.StatusUnauthorized, r.status, "%s: %s", why, r.body)
	require.Equal(t, core.CodeUnauthenticated, r.errorBody(t).Code, why)
	require.NotEmpty(t, r.header.Get("WWW-Authenticate"), why)
	return r.errorBody(t).Message
}

// A join token joins its node once, within its TTL, without an operator
// token; a second use, an expired token and a token for another node are
// the same 401. Only operators issue them.
func TestJoinTokensOverHTTP(t *testing.T) {
	t.Parallel()
	s, svc := nodeServer(t)
	_, member := s.tokenFor(t, "acme", "bob@acme", core.RoleMember)

	r := s.call(t, http.MethodPost, "/v1/nodes/n1/join-tokens", member, nil)
	require.Equal(t, http.StatusForbidden, r.status, "a tenant cannot issue join tokens: %s", r.body)
	require.Equal(t, core.CodePermissionDenied, r.errorBody(t).Code)
	for _, bad := range []any{map[string]any{"ttlSeconds": 0}, map[string]any{"ttlSeconds": 86401},
		map[string]any{"ttl": 60}} {
		r := s.call(t, http.MethodPost, "/v1/nodes/n1/join-tokens", s.operator, bad)
		require.Equal(t, http.StatusBadRequest, r.status, "%v: %s", bad, r.body)
		require.Equal(t, core.CodeInvalidArgument, r.errorBody(t).Code)
	}
	// No node can have these ids: a token for one could never be used.
	for _, id := range []string{"JN_BAD", strings.Repeat("n", 64), "-n1"} {
		r := s.call(t, http.MethodPost, "/v1/nodes/"+id+"/join-tokens", s.operator, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", id, r.body)
		require.Contains(t, r.errorBody(t).Message, "node id")
	}
	// An operator's join of a node that does not exist yet needs its pool.
	r = s.call(t, http.MethodPost, "/v1/nodes/jn-9/join", s.operator, map[string]any{})
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	require.Contains(t, r.errorBody(t).Message, "poolId")

	now := s.pg.Now(t)
	jt := s.joinToken(t, "n1", nil)
	require.True(t, strings.HasPrefix(jt.Token, "bcj_"), jt.Token)
	require.Equal(t, "n1", jt.NodeID)
	require.WithinDuration(t, now.Add(time.Hour), jt.ExpiresAt, time.Second)
	day := s.joinToken(t, "n1", map[string]any{"ttlSeconds": 86400})
	require.WithinDuration(t, now.Add(24*time.Hour), day.ExpiresAt, time.Second)

	// A join token is good for joining only.
	r = s.call(t, http.MethodGet, "/v1/whoami", jt.Token, nil)
	require.Equal(t, http.StatusUnauthorized, r.status)

	// Another node: refused, and not used up.
	other := s.requireJoinRefused(t, "n2", jt.Token, "another node")

	// The join registers the new node and issues its credential.
	var joined joinedJSON
	r = s.call(t, http.MethodPost, "/v1/nodes/n1/join", jt.Token, joinBody)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	r.decode(t, &joined)
	require.Equal(t, "n1", joined.NodeID)
	nodeID, _, err := svc.NodeSessions().AuthenticateNodeCredential(context.Background(), joined.Token)
	require.NoError(t, err)
	require.Equal(t, "n1", nodeID)

	second := s.requireJoinRefused(t, "n1", jt.Token, "second use")

	short := s.joinToken(t, "n1", map[string]any{"ttlSeconds": 60})
	s.pg.AdvanceSimClock(t, time.Minute)
	expired := s.requireJoinRefused(t, "n1", short.Token, "expired")
	unknown := s.requireJoinRefused(t, "n1", "bcj_nothing", "unknown")
	require.Equal(t, []string{unknown, unknown, unknown}, []string{other, second, expired},
		"refusals do not tell which")

	// The longer token still joins n1 (a re-join), and the operator path
	// works as before; a tenant cannot join.
	r = s.call(t, http.MethodPost, "/v1/nodes/n1/join", day.Token, joinBody)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	r = s.call(t, http.MethodPost, "/v1/nodes/n1/join", s.operator, joinBody)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	r = s.call(t, http.MethodPost, "/v1/nodes/n1/join", member, joinBody)
	require.Equal(t, http.StatusForbidden, r.status, "body: %s", r.body)
	r = s.call(t, http.MethodPost, "/v1/nodes/n1/join", "", joinBody)
	require.Equal(t, http.StatusUnauthorized, r.status, "body: %s", r.body)
}

type credentialJSON struct {
	ID         string     `json:"id"`
	CreatedAt  time.Time  `json:"createdAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
	GraceUntil *time.Time `json:"graceUntil"`
	Active     bool       `json:"active"`
}

// Operators list a node's credentials (never the secrets) and revoke one;
// a revoked credential no longer authenticates.
func TestNodeCredentialsOverHTTP(t *testing.T) {
	t.Parallel()
	s, svc := nodeServer(t)
	_, member := s.tokenFor(t, "acme", "bob@acme", core.RoleMember)
	var first, second joinedJSON
	r := s.call(t, http.MethodPost, "/v1/nodes/n1/join", s.operator, joinBody)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	r.decode(t, &first)
	r = s.call(t, http.MethodPost, "/v1/nodes/n1/join", s.operator, joinBody)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	r.decode(t, &second)

	r = s.call(t, http.MethodGet, "/v1/nodes/n1/credentials", s.operator, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.NotContains(t, string(r.body), first.Token)
	require.NotContains(t, string(r.body), second.Token)
	var list struct{ Items []credentialJSON }
	r.decode(t, &list)
	require.Len(t, list.Items, 2)
	byID := func() map[string]credentialJSON {
		out := map[string]credentialJSON{}
		for _, c := range list.Items {
			out[c.ID] = c
		}
		return out
	}
	old, cur := byID()[first.CredentialID], byID()[second.CredentialID]
	require.Equal(t, first.CredentialID, old.ID)
	require.True(t, old.Active, "superseded, within its grace")
	require.NotNil(t, old.RevokedAt)
	require.Equal(t, commands.DefaultNodeCredentialGrace, old.GraceUntil.Sub(*old.RevokedAt))
	require.Equal(t, second.CredentialID, cur.ID)
	require.True(t, cur.Active)
	require.Nil(t, cur.RevokedAt)
	require.Nil(t, cur.GraceUntil)

	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/v1/nodes/n1/credentials"},
		{http.MethodDelete, "/v1/nodes/n1/credentials/" + second.CredentialID},
	} {
		r := s.call(t, c.method, c.path, member, nil)
		require.Equal(t, http.StatusForbidden, r.status, "%s %s as a member: %s", c.method, c.path, r.body)
	}

	r = s.call(t, http.MethodDelete, "/v1/nodes/n1/credentials/"+second.CredentialID, s.operator, nil)
	require.Equal(t, http.StatusNoContent, r.status, "body: %s", r.body)
	_, _, err := svc.NodeSessions().AuthenticateNodeCredential(context.Background(), second.Token)
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err))
	r = s.call(t, http.MethodDelete, "/v1/nodes/n1/credentials/"+second.CredentialID, s.operator, nil)
	require.Equal(t, http.StatusNoContent, r.status, "revoking again: %s", r.body)

	for _, path := range []string{"/v1/nodes/n1/credentials/ncr_unknown", "/v1/nodes/nx/credentials/" + first.CredentialID} {
		r := s.call(t, http.MethodDelete, path, s.operator, nil)
		require.Equal(t, http.StatusNotFound, r.status, "%s: %s", path, r.body)
		require.Equal(t, core.CodeNotFound, r.errorBody(t).Code)
	}
	r = s.call(t, http.MethodGet, "/v1/nodes/nx/credentials", s.operator, nil)
	require.Equal(t, http.StatusNotFound, r.status, "body: %s", r.body)
	require.Equal(t, core.CodeNotFound, r.errorBody(t).Code)

	// Ids PostgreSQL cannot store are the caller's problem, never a 500.
	for _, id := range []string{"%00", "%FF", strings.Repeat("x", 5000)} {
		for _, c := range []struct{ method, path string }{
			{http.MethodGet, "/v1/nodes/" + id + "/credentials"},
			{http.MethodDelete, "/v1/nodes/n1/credentials/" + id},
			{http.MethodDelete, "/v1/nodes/" + id + "/credentials/" + id},
			{http.MethodPost, "/v1/nodes/" + id + "/join-tokens"},
			{http.MethodPost, "/v1/nodes/" + id + "/join"},
		} {
			r := s.call(t, c.method, c.path, s.operator, nil)
			require.Less(t, r.status, 500, "%s %.40s: %s", c.method, c.path, r.body)
			r = s.call(t, c.method, c.path, "bcj_x", nil)
			require.Less(t, r.status, 500, "%s %.40s: %s", c.method, c.path, r.body)
		}
	}

	r = s.call(t, http.MethodGet, "/v1/nodes/n1/credentials", s.operator, nil)
	r.decode(t, &list)
	require.False(t, byID()[second.CredentialID].Active)
	require.NotNil(t, byID()[second.CredentialID].RevokedAt)
}

// A join whose GPUs include one another node has is refused with what
// conflicts (409 naming the GPU), not "node not found": the node is not
// registered, and its token is not used up.
func TestJoinWithAnotherNodesGPUIsAConflict(t *testing.T) {
	t.Parallel()
	s, _ := nodeServer(t)
	first := s.joinToken(t, "n1", nil)
	body := map[string]any{"poolId": "metal", "vcpu": 8, "memoryMb": 1024, "diskGb": 10,
		"gpus": []map[string]any{{"uuid": "GPU-shared-0", "model": "H100-80GB", "memoryMb": 81920}}}
	r := s.call(t, http.MethodPost, "/v1/nodes/n1/join", first.Token, body)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)

	second := s.joinToken(t, "n2", nil)
	r = s.call(t, http.MethodPost, "/v1/nodes/n2/join", second.Token, body)
	require.Equal(t, http.StatusConflict, r.status, "body: %s", r.body)
	require.Equal(t, core.CodeConflict, r.errorBody(t).Code)
	require.Contains(t, r.errorBody(t).Message, "GPU-shared-0")
	body["gpus"] = []map[string]any{{"uuid": "GPU-n2-0", "model": "H100-80GB", "memoryMb": 81920}}
	r = s.call(t, http.MethodPost, "/v1/nodes/n2/join", second.Token, body)
	require.Equal(t, http.StatusCreated, r.status, "the token was not used up: %s", r.body)
}
