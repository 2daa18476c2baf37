package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every answer is nosniff; every answer under /v1, errors included, is
// no-store, since it is one token's view of live state.
func TestResponsesAreNosniffAndAPIAnswersNoStore(t *testing.T) {
	t.Parallel()
	s := setup(t)
	for _, c := range []struct {
		path, token string
		status      int
		noStore     bool
	}{
		{"/v1/whoami", s.operator, http.StatusOK, true},
		{"/v1/whoami", "", http.StatusUnauthorized, true},
		{"/v1/no-such-route", s.operator, http.StatusNotFound, true},
		{"/healthz", "", http.StatusOK, false},
	} {
		r := s.call(t, http.MethodGet, c.path, c.token, nil)
		require.Equal(t, c.status, r.status, "%s: %s", c.path, r.body)
		require.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"), c.path)
		if c.noStore {
			require.Equal(t, "no-store", r.header.Get("Cache-Control"), c.path)
		}
	}
}
