package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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
	server, requests := unreachedServer(t)
	inv := newInvocation(t, "COMPUTE_SERVER="+server, "COMPUTE_TOKEN=bc_operator")
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

// `tokens revoke` says how many tokens descending from the revoked one
// went with it, in the table and in the JSON it passes through.
func TestTokensRevokeShowsTheDescendantsRevoked(t *testing.T) {
	t.Parallel()
	var path atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path.Store(r.Method + " " + r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"tok_leaked","tenant":"ops","identity":"ci@ops","role":"operator",` +
			`"createdAt":"2026-12-01T00:00:00Z","revokedAt":"2026-12-06T00:00:00Z","issuedBy":"tok_root","descendantsRevoked":3}`))
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_operator")

	out, errOut, code := inv.run("tokens", "revoke", "tok_leaked")
	require.Zero(t, code, errOut)
	require.Equal(t, "DELETE /v1/tokens/tok_leaked", path.Load())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	require.Equal(t, []string{"ID", "TENANT", "IDENTITY", "ROLE", "CREATED", "EXPIRES", "REVOKED", "ISSUED-BY", "DESCENDANTS-REVOKED"},
		strings.Fields(lines[0]))
	require.Equal(t, []string{"tok_leaked", "ops", "ci@ops", "operator", "2026-12-01T00:00:00Z", "-", "2026-12-06T00:00:00Z", "tok_root", "3"},
		strings.Fields(lines[1]))

	out, errOut, code = inv.run("tokens", "revoke", "tok_leaked", "-o", "json")
	require.Zero(t, code, errOut)
	require.Contains(t, out, `"descendantsRevoked": 3`)
}

// `tokens list` shows ISSUED-BY to operators only. The API shows a token's
// issuer to operators only (it is always an operator's token, which a
// tenant never learns of), so for a member every token read ISSUED-BY "-",
// as if the server had issued it itself, although an operator's token had.
func TestTokensListShowsIssuedByToOperatorsOnly(t *testing.T) {
	t.Parallel()
	for role, want := range map[string][]string{
		"member":   {"ID", "TENANT", "IDENTITY", "ROLE", "CREATED", "EXPIRES", "REVOKED"},
		"operator": {"ID", "TENANT", "IDENTITY", "ROLE", "CREATED", "EXPIRES", "REVOKED", "ISSUED-BY"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Path == "/v1/whoami" {
				fmt.Fprintf(w, `{"tokenId":"tok_me","tenant":"acme","identity":"me","role":%q}`, role)
				return
			}
			issuedBy := "" // what the API answers a tenant
			if role == "operator" {
				issuedBy = `,"issuedBy":"tok_root"`
			}
			fmt.Fprintf(w, `{"items":[{"id":"tok_bob","tenant":"acme","identity":"bob","role":"member",`+
				`"createdAt":"2026-12-01T00:00:00Z"%s}],"nextCursor":""}`, issuedBy)
		}))
		t.Cleanup(srv.Close)
		inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_"+role)
		out, errOut, code := inv.run("tokens", "list")
		require.Zero(t, code, errOut)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2, out)
		require.Equal(t, want, strings.Fields(lines[0]), role)
		require.Len(t, strings.Fields(lines[1]), len(want), "%s: %s", role, out)
		if role == "operator" {
			require.Equal(t, "tok_root", strings.Fields(lines[1])[len(want)-1])
		}

		out, errOut, code = inv.run("tokens", "list", "-o", "json") // passed through as the server sent it
		require.Zero(t, code, errOut)
		require.Contains(t, out, `"id": "tok_bob"`)
	}
}

// `tokens create` names the token it made: its identity too, beside its
// id, tenant and role, so that an operator who pastes the block can tell
// which token it is (two of one tenant and role differ by identity only).
// The values stand in one column: they used to follow their labels at
// three different offsets ("identity: alice" past "role:   member").
// Scripts read a line by its label and take the value after the spaces,
// as they always could.
func TestTokensCreateNamesTheIdentity(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"tok_alice","tenant":"acme","identity":"alice","role":"member",` +
			`"createdAt":"2026-12-01T00:00:00Z","expiresAt":"2026-12-31T00:00:00Z","issuedBy":"tok_root","token":"bc_secret"}`))
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_operator")
	out, errOut, code := inv.run("tokens", "create", "--tenant", "acme", "--identity", "alice", "--role", "member")
	require.Zero(t, code, errOut)
	require.Equal(t, ""+
		"id:        tok_alice\n"+
		"tenant:    acme\n"+
		"identity:  alice\n"+
		"role:      member\n"+
		"token:     bc_secret\n"+
		"expiresAt: 2026-12-31T00:00:00Z\n", out)

	// What a script does: the field after the label.
	values := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		require.Len(t, f, 2, line)
		values[f[0]] = f[1]
	}
	require.Equal(t, "bc_secret", values["token:"])
	require.Equal(t, "tok_alice", values["id:"])
}
