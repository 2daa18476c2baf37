package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// A token that may have leaked must be revocable by whoever holds it, not
// only by an operator: the console's sign-out and docs/security.md tell a
// tenant's user to revoke such a token, and a member or viewer could not
// (403 for its own token). Any token may now revoke itself; revoking
// another token stays an operator's.
func TestAnyTokenMayRevokeItself(t *testing.T) {
	t.Parallel()
	s := setup(t)
	for _, role := range []core.Role{core.RoleMember, core.RoleViewer} {
		t.Run(string(role), func(t *testing.T) {
			ownID, own := s.tokenFor(t, "acme", "self-"+string(role), role)
			otherID, other := s.tokenFor(t, "acme", "other-"+string(role), role)

			// Another token, of its own tenant too: still refused, still valid.
			r := s.call(t, http.MethodDelete, "/v1/tokens/"+otherID, own, nil)
			require.Equal(t, http.StatusForbidden, r.status, "body: %s", r.body)
			require.Equal(t, core.CodePermissionDenied, r.errorBody(t).Code)
			require.Equal(t, http.StatusOK, s.call(t, http.MethodGet, "/v1/whoami", other, nil).status)

			r = s.call(t, http.MethodDelete, "/v1/tokens/"+ownID, own, nil)
			require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
			var tok tokenJSON
			r.decode(t, &tok)
			require.Equal(t, ownID, tok.ID)
			require.NotNil(t, tok.RevokedAt)
			require.NotContains(t, string(r.body), "issuedBy", "the issuer stays an operator's to see")

			// Refused from this answer on, by the process that answered.
			r = s.call(t, http.MethodGet, "/v1/whoami", own, nil)
			require.Equal(t, http.StatusUnauthorized, r.status)
			require.Equal(t, core.CodeUnauthenticated, r.errorBody(t).Code)
			require.Equal(t, http.StatusOK, s.call(t, http.MethodGet, "/v1/whoami", other, nil).status)
		})
	}
}
