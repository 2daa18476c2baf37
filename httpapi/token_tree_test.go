package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/authn"
)

// tokenRevokedJSON is the answer to DELETE /v1/tokens/{id}.
type tokenRevokedJSON struct {
	tokenJSON
	IssuedBy           *string `json:"issuedBy"`
	DescendantsRevoked *int    `json:"descendantsRevoked"`
}

// issueAs issues a token over the API with issuer's secret and returns it.
func (s *testServer) issueAs(t *testing.T, issuer, tenant, identity string, role core.Role) tokenJSON {
	t.Helper()
	var created tokenJSON
	s.mustCall(t, http.StatusCreated, http.MethodPost, "/v1/tokens", issuer,
		map[string]string{"tenant": tenant, "identity": identity, "role": string(role)}, &created)
	return created
}

// A leaked operator token that minted a second one before it was revoked
// gains nothing: revoking it revokes the token it issued and the token
// that one issued, whose open event stream ends too, and the answer says
// how many went with it. A tree beside it goes on working.
func TestRevokingATokenRevokesTheTokensItIssued(t *testing.T) {
	t.Parallel()
	s, auth := setupCachingAuth(t)
	require.NoError(t, auth.Sync(t.Context())) // the feed starts here

	leaked := s.issueAs(t, s.operator, "ops", "leaked@ops", core.RoleOperator)
	minted := s.issueAs(t, leaked.Token, "ops", "minted@ops", core.RoleOperator)
	grandchild := s.issueAs(t, minted.Token, "acme", "mallory@acme", core.RoleMember)
	sibling := s.issueAs(t, s.operator, "ops", "ci@ops", core.RoleOperator)
	siblingsChild := s.issueAs(t, sibling.Token, "acme", "bob@acme", core.RoleMember)

	// Operators see who issued a token; its own tenant does not (an
	// operator's token id).
	var got tokenRevokedJSON
	s.mustCall(t, http.StatusOK, http.MethodGet, "/v1/tokens/"+grandchild.ID, s.operator, nil, &got)
	require.Equal(t, minted.ID, *got.IssuedBy)
	got = tokenRevokedJSON{}
	s.mustCall(t, http.StatusOK, http.MethodGet, "/v1/tokens/"+grandchild.ID, grandchild.Token, nil, &got)
	require.Nil(t, got.IssuedBy, "not shown to the tenant")

	stream := s.openStream(t, grandchild.Token, "", "")
	require.Equal(t, http.StatusOK, stream.res.StatusCode)
	stream.first(t)
	for _, tok := range []tokenJSON{leaked, minted, grandchild, sibling, siblingsChild} {
		require.Equal(t, http.StatusOK, s.call(t, http.MethodGet, "/v1/whoami", tok.Token, nil).status, tok.Identity)
	}

	var revoked tokenRevokedJSON
	s.mustCall(t, http.StatusOK, http.MethodDelete, "/v1/tokens/"+leaked.ID, s.operator, nil, &revoked)
	require.Equal(t, leaked.ID, revoked.ID)
	require.NotNil(t, revoked.RevokedAt)
	require.NotNil(t, revoked.DescendantsRevoked)
	require.Equal(t, 2, *revoked.DescendantsRevoked, "the minted token and the one it issued")
	// The process that answered refuses them from its answer on, before
	// any poll of the revocation feed.
	for _, tok := range []tokenJSON{leaked, minted, grandchild} {
		require.Equal(t, http.StatusUnauthorized, s.call(t, http.MethodGet, "/v1/whoami", tok.Token, nil).status,
			"%s is refused at once", tok.Identity)
	}

	require.Eventually(t, func() bool {
		require.NoError(t, auth.Sync(t.Context()))
		return stream.ended()
	}, eventsWait, 5*time.Millisecond, "the grandchild's stream ends")
	for _, tok := range []tokenJSON{leaked, minted, grandchild} {
		r := s.call(t, http.MethodGet, "/v1/whoami", tok.Token, nil)
		require.Equal(t, http.StatusUnauthorized, r.status, tok.Identity)
		require.Equal(t, core.CodeUnauthenticated, r.errorBody(t).Code)
	}
	r := s.call(t, http.MethodPost, "/v1/tokens", minted.Token,
		map[string]string{"tenant": "ops", "identity": "another@ops", "role": "operator"})
	require.Equal(t, http.StatusUnauthorized, r.status, "a revoked descendant mints nothing: %s", r.body)
	for _, tok := range []tokenJSON{sibling, siblingsChild} {
		require.Equal(t, http.StatusOK, s.call(t, http.MethodGet, "/v1/whoami", tok.Token, nil).status,
			"%s: the tree beside it is untouched", tok.Identity)
	}

	// Revoking it again changes nothing and counts nothing.
	var again tokenRevokedJSON
	s.mustCall(t, http.StatusOK, http.MethodDelete, "/v1/tokens/"+leaked.ID, s.operator, nil, &again)
	require.True(t, revoked.RevokedAt.Equal(*again.RevokedAt))
	require.NotNil(t, again.DescendantsRevoked, "always present")
	require.Zero(t, *again.DescendantsRevoked)
}

// DELETE ?descendants=keep revokes the token alone: what it issued keeps
// working and issuing (how the bootstrap token is retired), and a revoke of
// it without keep later still reaches them. Any other value is 400.
func TestRevokingATokenAloneKeepsWhatItIssued(t *testing.T) {
	t.Parallel()
	s, auth := setupCachingAuth(t)
	require.NoError(t, auth.Sync(t.Context()))

	root := s.issueAs(t, s.operator, "ops", "root@ops", core.RoleOperator)
	admin := s.issueAs(t, root.Token, "ops", "admin@ops", core.RoleOperator)
	member := s.issueAs(t, admin.Token, "acme", "alice@acme", core.RoleMember)

	r := s.call(t, http.MethodDelete, "/v1/tokens/"+root.ID+"?descendants=none", s.operator, nil)
	require.Equal(t, http.StatusBadRequest, r.status, r.body)
	require.Equal(t, core.CodeInvalidArgument, r.errorBody(t).Code)
	require.Equal(t, http.StatusOK, s.call(t, http.MethodGet, "/v1/whoami", root.Token, nil).status, "a refused revoke revokes nothing")

	var alone tokenRevokedJSON
	s.mustCall(t, http.StatusOK, http.MethodDelete, "/v1/tokens/"+root.ID+"?descendants=keep", s.operator, nil, &alone)
	require.NotNil(t, alone.RevokedAt)
	require.Zero(t, *alone.DescendantsRevoked)
	require.Equal(t, http.StatusUnauthorized, s.call(t, http.MethodGet, "/v1/whoami", root.Token, nil).status)
	for _, tok := range []tokenJSON{admin, member} {
		require.Equal(t, http.StatusOK, s.call(t, http.MethodGet, "/v1/whoami", tok.Token, nil).status, tok.Identity)
	}
	later := s.issueAs(t, admin.Token, "acme", "bob@acme", core.RoleMember)

	var all tokenRevokedJSON
	s.mustCall(t, http.StatusOK, http.MethodDelete, "/v1/tokens/"+root.ID, s.operator, nil, &all)
	require.True(t, alone.RevokedAt.Equal(*all.RevokedAt), "the token itself was revoked before")
	require.Equal(t, 3, *all.DescendantsRevoked, "the admin, the member and the one issued after the first revoke")
	for _, tok := range []tokenJSON{admin, member, later} {
		require.Equal(t, http.StatusUnauthorized, s.call(t, http.MethodGet, "/v1/whoami", tok.Token, nil).status, tok.Identity)
	}
}

// setupCachingAuth is setupEvents with an authenticator that caches tokens
// as a server's does (authn.CacheTTL), so that a revoked token is refused
// only once the revocation reached the cache; the test syncs it as the
// server's feed loop would.
func setupCachingAuth(t *testing.T) (*eventServer, *authn.Authenticator) {
	t.Helper()
	var auth *authn.Authenticator
	s := setupEventsAdjusted(t, httpapi.EventAPI{}, func(d *httpapi.Deps) {
		auth = authn.New(d.Pool, authn.CacheTTL)
		d.Auth = auth
	})
	return s, auth
}
