package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/client"
	"github.com/bettercompute/compute/core"
)

// unreachedServer starts an API server that the invocation under test must
// never reach, because the command line refuses its input before sending
// anything: it counts the requests it gets, for the test to assert none,
// and answers each with an error.
func unreachedServer(t *testing.T) (url string, requests *atomic.Int32) {
	t.Helper()
	requests = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, `{"error":{"code":"INTERNAL","message":"not expected"}}`, http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, requests
}

// invocation runs the command line in this process, with env as its whole
// environment and its contexts file in a directory of the test. Its tree
// has the client commands only: the server commands are package main's,
// and so are their tests.
type invocation struct {
	env        map[string]string
	configPath string
	stdin      string
}

func newInvocation(t *testing.T, env ...string) *invocation {
	inv := &invocation{env: map[string]string{}, configPath: filepath.Join(t.TempDir(), "compute", "config.yaml")}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		inv.env[k] = v
	}
	return inv
}

func (inv *invocation) run(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	c := newCLI(Program{Stdin: strings.NewReader(inv.stdin), Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return inv.env[k] }})
	c.configPath = inv.configPath
	code = run(context.Background(), c, args)
	return out.String(), errOut.String(), code
}

// Bad input never reaches the server: it exits 2 and the message names the
// flag or argument at fault (a server command's: main's
// TestServerCommandBadInputNamesTheArgument).
func TestBadInputNamesTheFlag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"reservations", "create", "--pool", "p", "--gpus", "1", "--duration", "1h"}, `"start"`},
		{[]string{"reservations", "create", "--pool", "p", "--start", "tomorrow", "--duration", "1h"}, "--start"},
		{[]string{"reservations", "create", "--pool", "p", "--site", "s", "--start", "now", "--duration", "1h"}, "--pool, --site"},
		{[]string{"reservations", "create", "--pool", "p", "--start", "now"}, "--end, --duration"},
		{[]string{"reservations", "create", "--pool", "p", "--start", "now", "--duration", "-1h"}, "--duration"},
		{[]string{"reservations", "create", "--pool", "p", "--start", "now", "--duration", "1h", "--gpus", "x"}, "--gpus"},
		{[]string{"reservations", "create", "--pool", "p", "--start", "now", "--duration", "1h", "--slot-kind", "mig"}, "--slot-kind"},
		{[]string{"reservations", "create", "--pool", "p", "--start", "now", "--duration", "1h", "--toleration", "=v"}, "--toleration"},
		{[]string{"reservations", "list", "--state", "done"}, "--state"},
		{[]string{"reservations", "list", "--limit", "-1"}, "--limit"},
		{[]string{"reservations", "get"}, "RESERVATION_ID"},
		{[]string{"reservations", "get", "a", "b"}, `"b"`},
		{[]string{"reservations", "extend", "rsv_1"}, "--end, --by"},
		{[]string{"reservations", "extend", "rsv_1", "--by", "soon"}, "--by"},
		{[]string{"reservations", "frobnicate"}, `"frobnicate"`},
		{[]string{"reservations", "list", "-o", "xml"}, "--output"},
		{[]string{"reservations", "list", "--nope"}, "--nope"},
		{[]string{"nodes", "taint", "n1"}, "KEY[=VALUE]"},
		{[]string{"nodes", "taint", "n1", "k=v", "--effect", "Sometimes"}, "--effect"},
		{[]string{"nodes", "set-mode", "GPU-0"}, "MODE"},
		{[]string{"nodes", "set-mode", "GPU-0", "shared", "--slots", "2"}, "MODE"},
		{[]string{"nodes", "set-mode", "GPU-0", "mps", "--slots", "two"}, "--slots"},
		{[]string{"pools", "create", "p", "--site", "s", "--cpu-ratio", "NaN"}, "--cpu-ratio"},
		{[]string{"pools", "create", "p", "--site", "s", "--memory-ratio", "65"}, "--memory-ratio"},
		{[]string{"quotas", "set", "acme", "gpu"}, "RESOURCE=MAX"},
		{[]string{"quotas", "set", "acme", "gpu=lots"}, "RESOURCE=MAX"},
		{[]string{"quotas", "set", "acme"}, "RESOURCE=MAX"},
		{[]string{"quotas", "set", "acme", "vcpu=64", "gpus=8"}, `"gpus=8"`},
		{[]string{"quotas", "set", "acme", "gpu=8", "vcpu=64", "gpu=4"}, "gpu is named twice"},
		{[]string{"tokens", "create", "--tenant", "acme", "--identity", "x", "--role", "admin"}, "--role"},
		{[]string{"tokens", "create", "--tenant", "acme"}, `"identity"`},
		{[]string{"events", "tail", "--after", "c1", "--from-start"}, "--after, --from-start"},
		{[]string{"events", "tail", "--type", "a b"}, "--type"},
		{[]string{"webhooks", "update", "wh_1"}, "--url, --type"},
		{[]string{"webhooks", "recover", "wh_1", "--since", "yesterday"}, "--since"},
		{[]string{"webhooks", "verify", "--secret", "nope", "--id", "m", "--timestamp", "1", "--signature", "v1,x"}, "--secret"},
		{[]string{"pools", "create", "p1", "--site", "s1", "--kind", "cloud"}, "--kind"},
		{[]string{"pools", "create", "p1", "--site", "s1", "--workload-network", "nat"}, "--workload-network"},
		{[]string{"login", "--server", "localhost:8080", "--token", "bc_x"}, "--server"},
		{[]string{"login", "--server", "http://localhost:8080"}, "--token"},
		{[]string{"login", "--server", "http://alice:hunter2@localhost:8080", "--token", "bc_x"}, "--server"},
		{[]string{"context", "use", "nowhere"}, "NAME"},
		{[]string{"--context", "nowhere", "reservations", "list"}, "--context"},
		{[]string{"bogus"}, `"bogus"`},
	} {
		out, errOut, code := newInvocation(t).run(c.args...)
		require.Equal(t, exitUsage, code, "compute %s: %s", strings.Join(c.args, " "), errOut)
		require.Empty(t, out, "compute %s", strings.Join(c.args, " "))
		require.Contains(t, errOut, c.want, "compute %s", strings.Join(c.args, " "))
		require.True(t, strings.HasPrefix(errOut, "compute: "), errOut)
	}
}

// Without a context and without COMPUTE_SERVER and COMPUTE_TOKEN, a client
// command says how to log in and exits 3; a token is never sent to a
// server it was not saved for.
func TestNotLoggedInSaysHowToLogIn(t *testing.T) {
	t.Parallel()
	for _, env := range [][]string{nil, {"COMPUTE_SERVER=http://127.0.0.1:1"}, {"COMPUTE_TOKEN=bc_x"}} {
		_, errOut, code := newInvocation(t, env...).run("reservations", "list")
		require.Equal(t, exitAuth, code, "%v: %s", env, errOut)
		require.Contains(t, errOut, "compute login", "%v", env)
	}
}

// whoamiServer answers GET /v1/whoami for token and 401 for any other.
func whoamiServer(t *testing.T, token string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"code":"UNAUTHENTICATED","message":"missing, unknown or revoked token"}}`)
			return
		}
		fmt.Fprint(w, `{"tenant":"acme","identity":"alice","role":"member","tokenId":"tok_1"}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// login checks the token, saves it per context in a file only its owner
// can read, and makes the context current; COMPUTE_SERVER and
// COMPUTE_TOKEN override it; a refused token says how to log in again.
func TestLoginSavesContexts(t *testing.T) {
	t.Parallel()
	a, b := whoamiServer(t, "bc_a"), whoamiServer(t, "bc_b")
	inv := newInvocation(t)

	_, errOut, code := inv.run("login", "--server", a.URL, "--token", "bc_wrong")
	require.Equal(t, exitAuth, code, errOut)
	require.Contains(t, errOut, "UNAUTHENTICATED")
	// It blames the token just given, not a saved context (none was
	// saved), and does not send the user to the login they just ran.
	require.Contains(t, errOut, "The token given to compute login was refused")
	require.Contains(t, errOut, "nothing was saved")
	require.NotContains(t, errOut, "context")
	_, err := os.Stat(inv.configPath)
	require.True(t, os.IsNotExist(err), "a refused login saves nothing")
	// A server that is not there: the same, with exit 8.
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	_, errOut, code = inv.run("login", "--server", gone.URL, "--token", "bc_a")
	require.Equal(t, exitUnreachable, code, errOut)
	require.Contains(t, errOut, "cannot reach the server at "+gone.URL)
	require.Contains(t, errOut, "Nothing was saved")
	require.NotContains(t, errOut, "context")
	require.NotContains(t, errOut, "compute login --server URL")

	out, errOut, code := inv.run("login", "--server", a.URL, "--token", "bc_a", "--name", "a")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `context "a" is current`)
	require.NotContains(t, errOut, "warning", "plain http to this machine keeps the token on it")
	inv.stdin = "bc_b\n"
	_, errOut, code = inv.run("login", "--server", b.URL+"/", "--token-stdin", "--context", "b")
	require.Equal(t, 0, code, errOut)

	fi, err := os.Stat(inv.configPath)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(filepath.Dir(inv.configPath))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), di.Mode().Perm())

	c := newCLI(Program{Getenv: func(string) string { return "" }})
	c.configPath = inv.configPath
	f, err := c.loadConfig()
	require.NoError(t, err)
	require.Equal(t, configFileData{CurrentContext: "b", Contexts: map[string]configContext{
		"a": {Server: a.URL, Token: "bc_a"}, "b": {Server: b.URL, Token: "bc_b"}}}, f)

	out, _, code = inv.run("whoami", "-o", "json")
	require.Equal(t, 0, code)
	require.Contains(t, out, `"identity": "alice"`)
	out, _, code = inv.run("context", "list")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^\s+a\s+`+a.URL+`\n\*\s+b\s+`+b.URL, out)

	// Which server and token each way of choosing picks.
	for _, tc := range []struct {
		env     []string
		context string
		server  string
		token   string
	}{
		{nil, "", b.URL, "bc_b"},
		{nil, "a", a.URL, "bc_a"},
		{[]string{"COMPUTE_SERVER=http://elsewhere:8080", "COMPUTE_TOKEN=bc_env"}, "", "http://elsewhere:8080", "bc_env"},
		{[]string{"COMPUTE_TOKEN=bc_env"}, "a", a.URL, "bc_env"},
		{[]string{"COMPUTE_SERVER=" + a.URL}, "a", a.URL, "bc_a"},
	} {
		c := newCLI(Program{Getenv: func(k string) string {
			for _, kv := range tc.env {
				if name, v, _ := strings.Cut(kv, "="); name == k {
					return v
				}
			}
			return ""
		}})
		c.configPath, c.contextName = inv.configPath, tc.context
		got, err := c.resolveTarget()
		require.NoError(t, err, "%v %s", tc.env, tc.context)
		require.Equal(t, [2]string{tc.server, tc.token}, [2]string{got.server, got.token}, "%v %s", tc.env, tc.context)
	}
	// COMPUTE_SERVER pointing elsewhere does not borrow the context's token.
	_, errOut, code = (&invocation{env: map[string]string{"COMPUTE_SERVER": "http://elsewhere:8080"}, configPath: inv.configPath}).
		run("reservations", "list")
	require.Equal(t, exitAuth, code)
	require.Contains(t, errOut, "COMPUTE_TOKEN")

	// A token the server refuses: how to log in again.
	_, errOut, code = (&invocation{env: map[string]string{"COMPUTE_TOKEN": "bc_revoked"}, configPath: inv.configPath}).run("whoami")
	require.Equal(t, exitAuth, code)
	require.Contains(t, errOut, "missing, unknown or revoked token (UNAUTHENTICATED, HTTP 401)")
	require.Contains(t, errOut, "COMPUTE_TOKEN was refused")

	out, _, code = inv.run("context", "use", "a")
	require.Equal(t, 0, code)
	require.Contains(t, out, `"a" is current`)
	_, _, code = inv.run("context", "delete", "a")
	require.Equal(t, 0, code)
	_, errOut, code = inv.run("whoami")
	require.Equal(t, exitAuth, code, "the current context was deleted")
	require.Contains(t, errOut, "compute login")
	// The other contexts are still saved: it says so, and how to pick one.
	require.Contains(t, errOut, "no current context (saved: b)")
	require.Contains(t, errOut, "compute context use NAME")
}

// exitCodesByKind is the exit code of each error code of the API, as
// docs/cli.md's table lists them.
var exitCodesByKind = map[client.ErrorCode]int{
	client.ErrorCodeINVALIDARGUMENT: exitUsage, client.ErrorCodeUNSUPPORTEDMEDIATYPE: exitUsage,
	client.ErrorCodeTOKENLIFETIMEEXCEEDED: exitUsage,
	client.ErrorCodeUNAUTHENTICATED:       exitAuth, client.ErrorCodePERMISSIONDENIED: exitDenied,
	client.ErrorCodeTENANTSUSPENDED: exitDenied,
	client.ErrorCodeNOTFOUND:        exitNotFound, client.ErrorCodeMETHODNOTALLOWED: exitNotFound,
	client.ErrorCodeCONFLICT:      exitConflict,
	client.ErrorCodeQUOTAEXCEEDED: exitConflict, client.ErrorCodeIDEMPOTENCYKEYREUSED: exitConflict,
	client.ErrorCodeRATELIMITED: exitRetryLater, client.ErrorCodeUNAVAILABLE: exitRetryLater,
	client.ErrorCodeCURSOREXPIRED: exitCursorExpired, client.ErrorCodeINTERNAL: exitFailure,
}

// The exit code follows the kind of error.
func TestExitCodesByKind(t *testing.T) {
	t.Parallel()
	for code, want := range exitCodesByKind {
		err := apiCallError{err: fmt.Errorf("wrapped: %w", &client.APIError{Status: 400, Code: code})}
		require.Equal(t, want, exitCode(err), code)
	}
	require.Equal(t, exitRetryLater, exitCode(&client.APIError{Status: 502}))
	require.Equal(t, exitNotFound, exitCode(&client.APIError{Status: 405}))
	require.Equal(t, exitUsage, exitCode(core.Errorf(core.CodeInvalidArgument, "tenant: bad")))
	require.Equal(t, exitFailure, exitCode(fmt.Errorf("disk full")))
	require.Equal(t, exitUsage, exitCode(usagef("--x: bad")))
}

// Plain http warns unless the server is on this machine.
func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "api.localhost": true, "127.0.0.1": true, "127.8.9.10": true,
		"::1": true, "::ffff:127.0.0.1": true,
		"compute.example.com": false, "10.0.0.5": false, "192.0.2.1": false, "localhost.example.com": false, "": false,
	} {
		require.Equal(t, want, loopbackHost(host), host)
	}
}

// cancel's help says what the server does with a booked reservation:
// refuses it (409 CONFLICT, "release a booked or active one"), never
// releases it in cancel's stead.
func TestCancelHelpSendsABookedReservationToRelease(t *testing.T) {
	t.Parallel()
	out, _, code := newInvocation(t).run("reservations", "cancel", "--help")
	require.Equal(t, 0, code)
	require.NotContains(t, out, "a booked one is released instead")
	require.Contains(t, out, "release it instead")
}

// compute context answers -o json and -o yaml like every other command,
// so a script can read which server it will talk to.
func TestContextShowsInTheFormatAskedFor(t *testing.T) {
	t.Parallel()
	a := whoamiServer(t, "bc_a")
	inv := newInvocation(t)
	_, errOut, code := inv.run("login", "--server", a.URL, "--token", "bc_a", "--name", "a")
	require.Equal(t, 0, code, errOut)

	out, errOut, code := inv.run("context", "-o", "json")
	require.Equal(t, 0, code, errOut)
	require.JSONEq(t, `{"server":"`+a.URL+`","from":"context \"a\"","context":"a"}`, out)
	out, _, code = inv.run("context", "-o", "yaml")
	require.Equal(t, 0, code)
	require.Contains(t, out, "context: a\n")
	out, _, code = inv.run("context")
	require.Equal(t, 0, code)
	require.Equal(t, "server: "+a.URL+"\nfrom:   context \"a\"\n", out)
}

// A server URL that is not the API's, such as the node gateway's port
// (which answers a plain-text 401 to anything but a daemon), is not a
// refused token: the answer says the URL is the likely fault. An answer of
// the API itself (with its error code) gets no such line.
func TestAnAnswerWithoutTheAPIsEnvelopeQuestionsTheURL(t *testing.T) {
	t.Parallel()
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "authentication failed", http.StatusUnauthorized) // as gateway.Server answers
	}))
	t.Cleanup(gateway.Close)
	_, errOut, code := newInvocation(t, "COMPUTE_SERVER="+gateway.URL, "COMPUTE_TOKEN=bc_a").run("reservations", "list")
	require.Equal(t, exitAuth, code, errOut)
	require.Contains(t, errOut, "compute: authentication failed (HTTP 401)\nThat answer is not the compute API's")
	require.Contains(t, errOut, "is "+gateway.URL+" the API's URL")
	inv := newInvocation(t)
	_, errOut, code = inv.run("login", "--server", gateway.URL, "--token", "bc_a")
	require.Equal(t, exitAuth, code, errOut)
	require.Contains(t, errOut, "is "+gateway.URL+" the API's URL")

	api := whoamiServer(t, "bc_a")
	_, errOut, code = newInvocation(t, "COMPUTE_SERVER="+api.URL, "COMPUTE_TOKEN=bc_b").run("whoami")
	require.Equal(t, exitAuth, code, errOut)
	require.NotContains(t, errOut, "the API's URL")
}
