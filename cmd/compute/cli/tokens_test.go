package cli

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// A token's secret pasted where its id belongs (`tokens revoke bc_…`) is
// refused before anything is sent: in the request's path the secret would
// land in the server's access log, and the token, not found by that
// "id", would stay valid. The message does not repeat the secret.
func TestTokensRevokeRefusesASecret(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, `{"error":{"code":"NOT_FOUND","message":"no"}}`, http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_operator")
	for _, secret := range []string{"bc_aMndanrbyorvWSBG0AbUCCoYusbj-l4QoInjNqqg7BY", "st_MptP3y15117Ax1cYnjiOeUTsJee1bKCEF_37-W-JRH0",
		"bcn_OLsXs-cXOjpC6fMazxeKWt5jkPuQ9_fZFsIvWVSOi8M", "whsec_MfKQ9r8GKYqDxdG1eX0w2HbT2xXGDz5Zfx3c3xU4bXA="} {
		out, errOut, code := inv.run("tokens", "revoke", secret)
		require.Equal(t, exitUsage, code, errOut)
		require.Empty(t, out)
		require.Contains(t, errOut, "TOKEN_ID")
		require.Contains(t, errOut, "tok_")
		require.NotContains(t, errOut, secret)
	}
	require.Zero(t, requests.Load(), "the secret never left the machine")
}
