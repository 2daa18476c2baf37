package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/queries"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testBodyLimit is small so the over-limit test need not send megabytes.
const testBodyLimit = "4K"

// testServer is a running server on a fresh database, with an operator
// token to bootstrap everything else.
type testServer struct {
	url      string
	pg       *pgtest.DB
	echo     *echo.Echo
	clock    *clock.Clock
	auth     *authn.Authenticator
	logs     *testenv.LogBuffer
	operator string // bearer secret of an operator in tenant "ops"
}

func setup(t *testing.T, routes ...httpapi.Routes) *testServer {
	t.Helper()
	return setupWith(t, nil, routes...)
}

// setupWith is setup with the dependencies adjusted by adjust (nil: none)
// before the server is built.
func setupWith(t *testing.T, adjust func(*httpapi.Deps), routes ...httpapi.Routes) *testServer {
	t.Helper()
	pg := pgtest.New(t)
	logs := &testenv.LogBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	clk := clock.New(logger)
	_, err := clk.Sample(context.Background(), queries.New(pg.Pool))
	require.NoError(t, err)

	auth := authn.New(pg.Pool, 0)
	d := httpapi.Deps{
		Pool:      pg.Pool,
		Commands:  commands.New(pg.Pool, commands.Config{}),
		Clock:     clk,
		Auth:      auth,
		Logger:    logger,
		BodyLimit: testBodyLimit,
		Registry:  prometheus.NewRegistry(),
	}
	if adjust != nil {
		adjust(&d)
		if a, ok := d.Auth.(*authn.Authenticator); ok {
			auth = a
		}
	}
	e := httpapi.New(d, routes...)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	// Bootstrap the first operator the way `compute tokens create` does:
	// straight through the command, as the system.
	created, err := (&commands.Tokens{Pool: pg.Pool}).CreateToken(context.Background(),
		core.Actor{Role: core.RoleOperator, Identity: "test-bootstrap"}, "ops", "root@ops", core.RoleOperator)
	require.NoError(t, err)
	return &testServer{url: srv.URL, pg: pg, echo: e, clock: clk, auth: auth, logs: logs, operator: created.Secret}
}

// response is what a test looks at after a call.
type response struct {
	status int
	header http.Header
	body   []byte
}

// errorBody decodes the error envelope, failing the test if the body is
// anything else (in particular if it has fields beyond error.code/message).
func (r response) errorBody(t *testing.T) httpapi.ErrorDetail {
	t.Helper()
	var env httpapi.ErrorBody
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&env), "body: %s", r.body)
	require.NotEmpty(t, env.Error.Code)
	require.NotEmpty(t, env.Error.Message)
	return env.Error
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.body, v), "body: %s", r.body)
}

// call sends method path with an optional bearer token and JSON body.
func (s *testServer) call(t *testing.T, method, path, token string, body any) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	require.NoError(t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return s.do(t, req)
}

func (s *testServer) do(t *testing.T, req *http.Request) response {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// tokenFor issues a token through the API as the operator and returns its
// id and secret.
func (s *testServer) tokenFor(t *testing.T, tenant, identity string, role core.Role) (id, secret string) {
	t.Helper()
	r := s.call(t, http.MethodPost, "/v1/tokens", s.operator,
		map[string]string{"tenant": tenant, "identity": identity, "role": string(role)})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var created struct{ ID, Token string }
	r.decode(t, &created)
	require.NotEmpty(t, created.ID)
	require.NotEmpty(t, created.Token)
	return created.ID, created.Token
}

// logLines returns the JSON log records that carry request id rid.
func logLines(t *testing.T, logs, rid string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "log line %q", line)
		if rec["request_id"] == rid {
			out = append(out, rec)
		}
	}
	return out
}

func hasLine(lines []map[string]any, match func(map[string]any) bool) bool {
	for _, l := range lines {
		if match(l) {
			return true
		}
	}
	return false
}
