package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// COMPUTE_SERVER without COMPUTE_TOKEN uses a saved token only when the
// chosen context is for that server. When it is not, but another saved
// context is, the refusal names that context: it said "no saved context is
// for that server" and sent the user to log in again with a token already
// saved.
func TestServerAloneNamesTheContextSavedForIt(t *testing.T) {
	t.Parallel()
	a, b := whoamiServer(t, "bc_a"), whoamiServer(t, "bc_b")
	inv := newInvocation(t)
	for name, srv := range map[string]string{"a": a.URL, "b": b.URL} {
		_, errOut, code := inv.run("login", "--server", srv, "--token", "bc_"+name, "--name", name)
		require.Zero(t, code, errOut)
	}
	_, errOut, code := inv.run("context", "use", "a")
	require.Zero(t, code, errOut)

	inv.env["COMPUTE_SERVER"] = b.URL
	_, errOut, code = inv.run("whoami")
	require.Equal(t, exitAuth, code, errOut)
	require.Contains(t, errOut, "the context in use (a) is for "+a.URL)
	require.Contains(t, errOut, "Saved for that server: b; use it with --context b")
	require.NotContains(t, errOut, "no saved context is for that server")

	out, errOut, code := inv.run("--context", "b", "whoami") // as it says
	require.Zero(t, code, errOut)
	require.Contains(t, out, b.URL)

	_, errOut, code = inv.run("context", "delete", "a") // no current context
	require.Zero(t, code, errOut)
	_, errOut, code = inv.run("whoami")
	require.Equal(t, exitAuth, code, errOut)
	require.Contains(t, errOut, "there is no current context. Saved for that server: b")

	inv.env["COMPUTE_SERVER"] = "http://127.0.0.1:1" // none saved for it: as before
	_, errOut, code = inv.run("whoami")
	require.Equal(t, exitAuth, code, errOut)
	require.Contains(t, errOut, "no saved context is for that server")
}
