package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
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
