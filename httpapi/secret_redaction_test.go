package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/queries"
	"github.com/bettercompute/compute/webhook"
)

// requireNoSecret fails when text holds the body of secret (what follows
// its prefix), as sent or percent-encoded.
func requireNoSecret(t *testing.T, text, secret, where string) {
	t.Helper()
	for _, p := range core.SecretPrefixes {
		if body, ok := strings.CutPrefix(secret, p); ok {
			for _, form := range []string{body, url.PathEscape(body), url.QueryEscape(body)} {
				require.NotContains(t, text, form, "%s holds the secret %s…", where, p)
			}
			return
		}
	}
	t.Fatalf("%.8s… is not shaped like a secret", secret)
}

// A client that pastes a secret into a path or a query string (an API
// token where its id belongs, a join token, a node credential, a stream
// ticket, a webhook signing secret) finds it in neither the access log,
// nor the error envelope, nor /metrics: the log keeps the path with the
// secret's prefix, /v1/tokens/bc_[redacted], and metrics name the route
// pattern.
func TestSecretsInPathsAndQueriesAreRedacted(t *testing.T) {
	t.Parallel()
	s, _ := nodeServer(t, func(r httpapi.Router) { httpapi.ReadRoutes(queries.New(r.Deps.Pool))(r) })
	// Secrets as the server mints them.
	_, apiToken := s.tokenFor(t, "acme", "bob@acme", core.RoleMember)
	joinToken := s.joinToken(t, "n1", nil).Token
	jt := s.joinToken(t, "n2", nil)
	r := s.call(t, http.MethodPost, "/v1/nodes/n2/join", jt.Token, joinBody)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var joined joinedJSON
	r.decode(t, &joined)
	nodeCredential := joined.Token
	r = s.call(t, http.MethodPost, "/v1/events/stream-tickets", apiToken, nil)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var ticket struct{ Ticket string }
	r.decode(t, &ticket)
	var signing string
	for !strings.ContainsAny(signing, "+/") { // one that must be escaped in a path and a query
		signing = webhook.NewSecret()
	}
	secrets := []string{apiToken, joinToken, nodeCredential, ticket.Ticket, signing}
	for i, p := range core.SecretPrefixes {
		require.True(t, strings.HasPrefix(secrets[i], p), "secret %d is %s…", i, p)
	}

	cases := []struct {
		method, path, token string
		status              int
		logged              string // the access log's path
		message             string // the envelope's, when it quotes the secret
	}{
		{http.MethodDelete, "/v1/tokens/" + apiToken, s.operator, http.StatusNotFound,
			"/v1/tokens/bc_[redacted]", "token bc_[redacted] not found"},
		{http.MethodGet, "/v1/tokens/" + apiToken, "", http.StatusUnauthorized, "/v1/tokens/bc_[redacted]", ""},
		{http.MethodGet, "/v1/reservations/" + ticket.Ticket, apiToken, http.StatusNotFound,
			"/v1/reservations/st_[redacted]", "reservation st_[redacted] not found"},
		{http.MethodDelete, "/v1/nodes/n2/credentials/" + nodeCredential, s.operator, http.StatusNotFound,
			"/v1/nodes/n2/credentials/bcn_[redacted]", "node credential bcn_[redacted] not found"},
		{http.MethodDelete, "/v1/nodes/n2/join-tokens/" + joinToken, s.operator, http.StatusNotFound,
			"/v1/nodes/n2/join-tokens/bcj_[redacted]", "join token bcj_[redacted] not found"},
		{http.MethodGet, "/v1/reservations/" + url.PathEscape(signing), apiToken, http.StatusNotFound,
			"/v1/reservations/whsec_[redacted]", "reservation whsec_[redacted] not found"},
		{http.MethodGet, "/v1/reservations?cursor=" + apiToken + "&limit=5", apiToken, http.StatusBadRequest,
			"/v1/reservations", `malformed cursor "bc_[redacted]"`},
		{http.MethodGet, "/v1/reservations?limit=" + joinToken, apiToken, http.StatusBadRequest,
			"/v1/reservations", fmt.Sprintf(`limit must be an integer from 1 to %d, not "bcj_[redacted]"`, queries.MaxLimit)},
		{http.MethodGet, "/v1/reservations?cursor=" + url.QueryEscape(signing), apiToken, http.StatusBadRequest,
			"/v1/reservations", `malformed cursor "whsec_[redacted]"`},
		{http.MethodGet, "/v1/events/stream?ticket=" + url.QueryEscape(signing), "", http.StatusUnauthorized,
			"/v1/events/stream", ""},
		{http.MethodGet, "/elsewhere/" + ticket.Ticket, "", http.StatusNotFound, "/elsewhere/st_[redacted]", ""},
	}
	var answers strings.Builder
	for _, c := range cases {
		req, err := http.NewRequest(c.method, s.url+c.path, nil)
		require.NoError(t, err)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		// A secret as the request id is not kept either.
		req.Header.Set("X-Request-Id", nodeCredential)
		r := s.do(t, req)
		require.Equal(t, c.status, r.status, "%s %.40s: %s", c.method, c.path, r.body)
		rid := r.header.Get("X-Request-Id")
		require.NotEmpty(t, rid)
		require.NotEqual(t, nodeCredential, rid)
		if c.message != "" {
			require.Equal(t, c.message, r.errorBody(t).Message)
		}
		lines := logLines(t, s.logs.String(), rid)
		require.True(t, hasLine(lines, func(l map[string]any) bool {
			return l["msg"] == "http request" && l["path"] == c.logged
		}), "access log of %s %s: %v", c.method, c.logged, lines)
		fmt.Fprintf(&answers, "%v %s\n", r.header, r.body)
	}

	res := s.call(t, http.MethodGet, "/metrics", s.operator, nil)
	require.Equal(t, http.StatusOK, res.status)
	metrics := string(res.body)
	require.Contains(t, metrics, `route="/v1/tokens/:id"`)
	require.Contains(t, metrics, `route="/v1/reservations/:id"`)
	require.Contains(t, metrics, `route="unmatched"`)
	for _, secret := range secrets {
		requireNoSecret(t, s.logs.String(), secret, "the log")
		requireNoSecret(t, answers.String(), secret, "an answer")
		requireNoSecret(t, metrics, secret, "/metrics")
	}
}

// The request's span carries its path with the secret redacted, and the
// failed command's span the envelope's redacted message.
func TestSecretsInPathsAreRedactedInSpans(t *testing.T) {
	t.Parallel()
	s, sr := traced(t)
	_, apiToken := s.tokenFor(t, "acme", "bob@acme", core.RoleMember)
	req, err := http.NewRequest(http.MethodDelete, s.url+"/v1/tokens/"+apiToken, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.operator)
	req.Header.Set("User-Agent", "script/1.0 (token "+apiToken+")")
	req.Header.Set("Traceparent", "00-1af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusNotFound, res.StatusCode)

	id, _ := trace.TraceIDFromHex("1af7651916cd43dd8448eb211c80319c")
	spans := spansOf(t, sr, id, 2)
	server, command := spans["DELETE /v1/tokens/:id"], spans["command revokeToken"]
	require.NotNil(t, server, "spans: %v", spans)
	require.NotNil(t, command, "spans: %v", spans)
	require.Equal(t, "/v1/tokens/bc_[redacted]", attrs(server)["url.path"].AsString())
	require.Equal(t, "token bc_[redacted] not found", command.Status().Description)
	var all strings.Builder
	for name, sp := range spans {
		fmt.Fprintf(&all, "%s %v %v %v\n", name, sp.Attributes(), sp.Status(), sp.Events())
	}
	requireNoSecret(t, all.String(), apiToken, "a span")
}
