package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// `compute login` refuses a server URL with a query or a fragment, or
// holding a path of the API (/v1…), before asking the server anything and
// before saving anything (exit 2): such a URL was checked, saved and used
// as given ("http://host:8080?x=1" logged in and was the context's server
// from then on).
func TestLoginRefusesAServerURLThatIsNotTheAPIsRoot(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"tokenId":"tok_a","tenant":"acme","identity":"alice","role":"member"}`))
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t)
	for server, want := range map[string]string{
		srv.URL + "?x=1":         "has a query or a fragment: give the API's base URL alone, such as " + srv.URL,
		srv.URL + "/?":           "has a query or a fragment",
		srv.URL + "#frag":        "has a query or a fragment",
		srv.URL + "#":            "has a query or a fragment",
		srv.URL + "/v1":          "holds a path of the API (/v1): give the API's base URL, such as " + srv.URL,
		srv.URL + "/v1/whoami":   "holds a path of the API (/v1/whoami)",
		srv.URL + "/compute/v1/": "holds a path of the API (/v1): give the API's base URL, such as " + srv.URL + "/compute",
	} {
		out, errOut, code := inv.run("login", "--server", server, "--token", "bc_a")
		require.Equal(t, exitUsage, code, "%s: %s", server, errOut)
		require.Empty(t, out, server)
		require.Contains(t, errOut, "compute: --server: ", server)
		require.Contains(t, errOut, want, server)
	}
	require.Zero(t, requests.Load(), "refused before asking the server")
	_, err := os.Stat(inv.configPath)
	require.True(t, os.IsNotExist(err), "nothing saved")

	// A base URL with a path of its own (behind a proxy) is a base URL.
	_, errOut, code := inv.run("login", "--server", srv.URL+"/compute", "--token", "bc_a")
	require.Zero(t, code, errOut)
}

// A login whose server answers the API's 404 to /v1/whoami (a path under
// the API's root that is not the root) says that --server is not the
// API's base URL, and saves nothing.
func TestLoginToAPathUnderTheAPISaysSo(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":"NOT_FOUND","message":"route not found"}}`))
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t)
	_, errOut, code := inv.run("login", "--server", srv.URL+"/prefix", "--token", "bc_a")
	require.Equal(t, exitNotFound, code, errOut)
	require.Contains(t, errOut, srv.URL+"/prefix/v1/whoami is not the API's")
	require.Contains(t, errOut, "Nothing was saved")
	_, err := os.Stat(inv.configPath)
	require.True(t, os.IsNotExist(err), "nothing saved")
}
