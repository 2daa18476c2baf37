package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// Cross-site request forgery needs a credential the browser attaches by
// itself (a cookie) and a request another site's page may send without a
// preflight (a form post). The API has neither: a token in a cookie is no
// credential, no answer sets a cookie, and a body that a form can send
// (urlencoded, multipart, text/plain) is refused even with a valid token.
func TestNoCookieCredentialAndNoFormPosts(t *testing.T) {
	t.Parallel()
	s := setup(t)

	req, err := http.NewRequest(http.MethodGet, s.url+"/v1/whoami", nil)
	require.NoError(t, err)
	for _, name := range []string{"token", "session", "Authorization"} {
		req.AddCookie(&http.Cookie{Name: name, Value: s.operator})
	}
	r := s.do(t, req)
	require.Equal(t, http.StatusUnauthorized, r.status, "a cookie authenticated: %s", r.body)
	require.Equal(t, core.CodeUnauthenticated, r.errorBody(t).Code)
	require.Empty(t, r.header.Values("Set-Cookie"))

	for _, ct := range []string{"application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain"} {
		req, err := http.NewRequest(http.MethodPost, s.url+"/v1/tokens",
			strings.NewReader("tenant=acme&identity=forged&role=operator"))
		require.NoError(t, err)
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Authorization", "Bearer "+s.operator)
		r := s.do(t, req)
		require.Equal(t, http.StatusUnsupportedMediaType, r.status, "%s: %s", ct, r.body)
		require.Equal(t, core.CodeUnsupportedMediaType, r.errorBody(t).Code, ct)
		require.Empty(t, r.header.Values("Set-Cookie"), ct)
	}
	r = s.call(t, http.MethodPost, "/v1/tokens", s.operator, map[string]string{"tenant": "acme", "identity": "bob", "role": "member"})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.Empty(t, r.header.Values("Set-Cookie"), "signing in by creating a token sets no cookie")
}
