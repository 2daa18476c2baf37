package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// `tokens create --expires-in` takes a duration from now; what it cannot
// read is bad input (exit 2), said by the flag with an example and found
// before anything is sent: a negative or zero lifetime, one under a
// second, garbage, a bare number, days, a duration too long to hold, an
// empty value. Before, garbage and a too-long duration came out as
// pflag's `invalid argument … time: invalid duration "3000000h"`, which
// did not say that the value was too long, and 1ns reached the server,
// which answered about expiresAt, a name the command line never used.
func TestTokensCreateExpiresInRefusesWhatIsNotALifetime(t *testing.T) {
	t.Parallel()
	server, requests := unreachedServer(t)
	inv := newInvocation(t, "COMPUTE_SERVER="+server, "COMPUTE_TOKEN=bc_operator")
	for v, want := range map[string]string{
		"-1h":       `--expires-in: "-1h" is not a positive duration: give how long the token stays valid from now, such as 720h`,
		"0":         `--expires-in: "0" is not a positive duration`,
		"0s":        `--expires-in: "0s" is not a positive duration`,
		"-3000000h": `--expires-in: "-3000000h" is not a positive duration`,
		"1ns":       `--expires-in: "1ns" is shorter than 1s`,
		"999ms":     `--expires-in: "999ms" is shorter than 1s`,
		"garbage":   `--expires-in: "garbage" is not a duration: give how long the token stays valid from now, such as 720h`,
		"1":         `--expires-in: "1" is not a duration`,
		"30d":       `--expires-in: "30d": days are not a unit here: write hours (720h is 30 days)`,
		"3000000h":  `--expires-in: "3000000h" is too long: the longest is 2562047h (about 292 years)`,
		"":          `--expires-in: missing: give how long the token stays valid from now`,
	} {
		out, errOut, code := inv.run("tokens", "create", "--tenant", "acme", "--identity", "ci", "--expires-in", v)
		require.Equal(t, exitUsage, code, "%q: %s", v, errOut)
		require.Empty(t, out, v)
		require.Contains(t, errOut, "compute: "+want, v)
	}
	require.Zero(t, requests.Load(), "bad input reached the server")
}

// The longest duration --expires-in reads is the longest it names in its
// message, and the time it sends is now plus the duration, in whole
// seconds, printed as expiresAt: the API's name for the instant, which the
// output used to call "expires".
func TestTokensCreateExpiresInSendsExpiresAt(t *testing.T) {
	t.Parallel()
	var sent atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ExpiresAt time.Time `json:"expiresAt"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &req)
		sent.Store(req.ExpiresAt)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"tok_ci","tenant":"acme","identity":"ci","role":"member","createdAt":"2026-12-01T00:00:00Z",` +
			`"expiresAt":"` + req.ExpiresAt.UTC().Format(time.RFC3339) + `","token":"bc_secret"}`))
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_operator")
	for _, c := range []struct {
		v string
		d time.Duration
	}{{"720h", 720 * time.Hour}, {"1h30m", 90 * time.Minute}, {"1s", time.Second}, {maxExpiresIn(), 2562047 * time.Hour}} {
		before := time.Now()
		out, errOut, code := inv.run("tokens", "create", "--tenant", "acme", "--identity", "ci", "--expires-in", c.v)
		after := time.Now()
		require.Zero(t, code, "%s: %s", c.v, errOut)
		at := sent.Load().(time.Time)
		require.Equal(t, at.Truncate(time.Second), at, "%s: whole seconds", c.v)
		require.False(t, at.Before(before.Add(c.d).Truncate(time.Second)), c.v)
		require.False(t, at.After(after.Add(c.d)), c.v)
		require.Contains(t, out, "\nexpiresAt: "+at.UTC().Format(time.RFC3339)+"\n", c.v)
	}
	require.Equal(t, "2562047h", maxExpiresIn())
}

// The server refuses an expiresAt (past the issuing token's expiry, past
// its maximum lifetime, not in the future) or requires one, naming the
// API's field; the command line says which --expires-in made that time,
// or that --expires-in is how to give one. The exit code stays the
// server's code's (2).
func TestTokensCreateSaysWhichFlagMadeExpiresAt(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ExpiresAt *time.Time `json:"expiresAt"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &req)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		if req.ExpiresAt == nil {
			_, _ = w.Write([]byte(`{"error":{"code":"TOKEN_LIFETIME_EXCEEDED","message":"expiresAt is required: this server issues tokens for at most 24h"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"error":{"code":"INVALID_ARGUMENT","message":"expiresAt ` + req.ExpiresAt.Format(time.RFC3339) +
			` is after 2026-12-08T00:00:00Z, when the token issuing it expires"}}`))
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_operator")

	_, errOut, code := inv.run("tokens", "create", "--tenant", "acme", "--identity", "ci", "--expires-in", "720h")
	require.Equal(t, exitUsage, code, errOut)
	require.Regexp(t, `(?m)^compute: expiresAt (\S+) is after .*\(INVALID_ARGUMENT, HTTP 400\)\n`+
		`--expires-in 720h asked for expiresAt (\S+) \(now, by this machine's clock, plus 720h\)\.\n$`, errOut)

	_, errOut, code = inv.run("tokens", "create", "--tenant", "acme", "--identity", "ci")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "(TOKEN_LIFETIME_EXCEEDED, HTTP 400)\nGive --expires-in: how long the token stays valid from now, such as 720h")
}
