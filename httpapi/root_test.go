package httpapi_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/console"
	"github.com/bettercompute/compute/httpapi"
)

// getRoot sends GET / with accept (none when empty), without following a
// redirect.
func getRoot(t *testing.T, s *testServer, accept string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+"/", nil)
	require.NoError(t, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// The API's root is the address the README gives. A browser opening it is
// sent to the console when the server mounts one; an API client (and a
// browser on a server without the console) gets an index of where things
// are, never a 404.
func TestRootLeadsSomewhere(t *testing.T) {
	t.Parallel()
	// As compute serve mounts the console (cmd/compute's consoleRoutes).
	withConsole := func(r httpapi.Router) {
		h := echo.WrapHandler(console.Handler())
		r.Echo.GET("/ui", h)
		r.Echo.GET("/ui/*", h)
	}
	s := setup(t, withConsole)

	const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	r := getRoot(t, s, browser)
	require.Equal(t, http.StatusFound, r.status)
	require.Equal(t, console.Prefix, r.header.Get("Location"))

	for _, accept := range []string{"", "*/*", "application/json"} {
		r := getRoot(t, s, accept)
		require.Equal(t, http.StatusOK, r.status, "Accept: %s", accept)
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		require.JSONEq(t, `{"api":"/v1","openapi":"/openapi.yaml","health":"/healthz","console":"/ui/"}`, string(r.body))
	}

	// Without the console: the index, to a browser too, with no console in it.
	bare := setup(t)
	r = getRoot(t, bare, browser)
	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `{"api":"/v1","openapi":"/openapi.yaml","health":"/healthz"}`, string(r.body))
}
