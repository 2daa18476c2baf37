package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
)

// Revoking an operator token with its descendants revokes the join tokens
// they issued and nobody used yet: a leaked operator token's join tokens
// join nothing after its revocation. A join token used before stays used
// (its node keeps its credential), a revoke of the token alone leaves its
// join tokens valid, and a revoked token issues none.
func TestRevokingATokenRevokesItsUnusedJoinTokens(t *testing.T) {
	t.Parallel()
	s := newAPIServer(t, time.Second)
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/sites", s.operator, map[string]any{"id": "fra1", "name": "Frankfurt 1"}, nil)
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/pools", s.operator,
		map[string]any{"id": "metal", "siteId": "fra1", "kind": "bare-metal"}, nil)
	operatorToken := func(issuer, identity string) tokenJSON {
		t.Helper()
		var tok tokenJSON
		s.must(t, http.StatusCreated, http.MethodPost, "/v1/tokens", issuer,
			map[string]any{"tenant": "ops", "identity": identity, "role": "operator"}, &tok)
		return tok
	}
	joinToken := func(issuer, node string) joinTokenJSON {
		t.Helper()
		var jt joinTokenJSON
		s.must(t, http.StatusCreated, http.MethodPost, "/v1/nodes/"+node+"/join-tokens", issuer, nil, &jt)
		return jt
	}
	join := func(node, token string) int {
		t.Helper()
		return s.call(t, http.MethodPost, "/v1/nodes/"+node+"/join", token, joinBody).status
	}

	leaked := operatorToken(s.operator, "leaked@ops")
	minted := operatorToken(leaked.Token, "minted@ops")
	used := joinToken(leaked.Token, "node-used")
	require.Equal(t, http.StatusCreated, join("node-used", used.Token))
	unused := joinToken(leaked.Token, "node-a")
	mintedsJoin := joinToken(minted.Token, "node-b")

	kept := operatorToken(s.operator, "kept@ops")
	keptsJoin := joinToken(kept.Token, "node-c")

	s.must(t, http.StatusOK, http.MethodDelete, "/v1/tokens/"+leaked.ID, s.operator, nil, nil)
	require.Equal(t, http.StatusUnauthorized, join("node-a", unused.Token), "the leaked token's own join token")
	require.Equal(t, http.StatusUnauthorized, join("node-b", mintedsJoin.Token), "a descendant's join token")

	s.must(t, http.StatusOK, http.MethodDelete, "/v1/tokens/"+kept.ID+"?descendants=keep", s.operator, nil, nil)
	require.Equal(t, http.StatusCreated, join("node-c", keptsJoin.Token), "a token revoked alone leaves its join tokens")

	// A revoked token issues no join token, however it reaches the command.
	_, err := s.h.CreateJoinToken(t.Context(),
		core.Actor{TokenID: leaked.ID, Tenant: "ops", Identity: "leaked@ops", Role: core.RoleOperator}, "node-d", 0)
	require.ErrorContains(t, err, "revoked or unknown")
}

// An operator token with an expiry issues only join tokens that expire no
// later than itself, as it issues only such tokens: a join token admits a
// machine as a node, whose credential lasts until revoked, so a leaked
// token with a minute left minted a 24-hour join token that joined a node
// a day after the token itself was refused. A longer ttlSeconds, or the
// default hour, past the issuer's expiry is 400 naming it, and nothing is
// issued; one that ends with it or sooner is issued and joins.
func TestJoinTokenCannotOutliveTheTokenThatIssuesIt(t *testing.T) {
	t.Parallel()
	s := newAPIServer(t, time.Second)
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/sites", s.operator, map[string]any{"id": "fra1", "name": "Frankfurt 1"}, nil)
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/pools", s.operator,
		map[string]any{"id": "metal", "siteId": "fra1", "kind": "bare-metal"}, nil)
	expiry := s.pg.Now(t).Add(30 * time.Minute)
	var issuer tokenJSON
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/tokens", s.operator, map[string]any{
		"tenant": "ops", "identity": "ci@ops", "role": "operator", "expiresAt": expiry.Format(time.RFC3339Nano)}, &issuer)

	for name, body := range map[string]any{"a day": map[string]any{"ttlSeconds": 86400}, "the default hour": nil} {
		r := s.call(t, http.MethodPost, "/v1/nodes/node-late/join-tokens", issuer.Token, body)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", name, r.body)
		var e struct{ Error httpapi.ErrorDetail }
		require.NoError(t, json.Unmarshal(r.body, &e), name)
		require.Equal(t, core.CodeInvalidArgument, e.Error.Code, name)
		require.Contains(t, e.Error.Message, expiry.UTC().Format(time.RFC3339), "%s: names the issuer's expiry", name)
	}
	var n int
	require.NoError(t, s.pg.Pool.QueryRow(t.Context(), "SELECT count(*) FROM node_join_tokens WHERE node_id = 'node-late'").Scan(&n))
	require.Zero(t, n, "nothing issued by a refused request")

	var jt joinTokenJSON
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/nodes/node-soon/join-tokens", issuer.Token,
		map[string]any{"ttlSeconds": 1700}, &jt)
	require.False(t, jt.ExpiresAt.After(expiry), "expires %s, its issuer %s", jt.ExpiresAt, expiry)
	require.Equal(t, http.StatusCreated, s.call(t, http.MethodPost, "/v1/nodes/node-soon/join", jt.Token, joinBody).status)
}

// A node credential is a credential of its own: the operator token whose
// join token admitted the node can expire or be revoked, with its
// descendants, and the node's credential still authenticates (its daemon
// reconnects), so that rotating an operator's token does not drop the
// fleet. Only revoking the credential, or retiring the node, ends it
// (docs/security.md, Stolen node credentials).
func TestNodeCredentialOutlivesTheTokenThatAdmittedIt(t *testing.T) {
	t.Parallel()
	s := newAPIServer(t, time.Second)
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/sites", s.operator, map[string]any{"id": "fra1", "name": "Frankfurt 1"}, nil)
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/pools", s.operator,
		map[string]any{"id": "metal", "siteId": "fra1", "kind": "bare-metal"}, nil)
	var expiring, revoked tokenJSON
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/tokens", s.operator, map[string]any{
		"tenant": "ops", "identity": "expiring@ops", "role": "operator",
		"expiresAt": s.pg.Now(t).Add(30 * time.Minute).Format(time.RFC3339Nano)}, &expiring)
	s.must(t, http.StatusCreated, http.MethodPost, "/v1/tokens", s.operator, map[string]any{
		"tenant": "ops", "identity": "revoked@ops", "role": "operator"}, &revoked)

	credentials := map[string]string{}
	for node, issuer := range map[string]string{"node-e": expiring.Token, "node-r": revoked.Token} {
		var jt joinTokenJSON
		s.must(t, http.StatusCreated, http.MethodPost, "/v1/nodes/"+node+"/join-tokens", issuer,
			map[string]any{"ttlSeconds": 600}, &jt)
		var joined joinedJSON
		s.must(t, http.StatusCreated, http.MethodPost, "/v1/nodes/"+node+"/join", jt.Token, joinBody, &joined)
		credentials[node] = joined.Token
	}

	s.pg.AdvanceSimClock(t, time.Hour)
	s.must(t, http.StatusOK, http.MethodDelete, "/v1/tokens/"+revoked.ID, s.operator, nil, nil)
	for _, issuer := range []string{expiring.Token, revoked.Token} {
		require.Equal(t, http.StatusUnauthorized, s.call(t, http.MethodGet, "/v1/whoami", issuer, nil).status)
	}
	for node, credential := range credentials {
		got, _, err := s.h.NodeSessions().AuthenticateNodeCredential(t.Context(), credential)
		require.NoError(t, err, "%s's credential, its issuer's token gone", node)
		require.Equal(t, node, got)
	}
}
