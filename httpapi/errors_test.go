package httpapi_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
)

func TestStatusOfEveryCode(t *testing.T) {
	t.Parallel()
	want := map[core.Code]int{
		core.CodeInvalidArgument:       400,
		core.CodeUnsupportedMediaType:  415,
		core.CodeUnauthenticated:       401,
		core.CodePermissionDenied:      403,
		core.CodeNotFound:              404,
		core.CodeMethodNotAllowed:      405,
		core.CodeConflict:              409,
		core.CodeQuotaExceeded:         409,
		core.CodeIdempotencyKeyReused:  422,
		core.CodeCursorExpired:         410,
		core.CodeUnavailable:           503,
		core.CodeRateLimited:           429,
		core.CodeTokenLifetimeExceeded: 400,
		core.CodeTenantSuspended:       403,
		core.CodeInternal:              500,
	}
	for code, status := range want {
		require.Equal(t, status, httpapi.StatusOf(code), code)
	}
	require.Equal(t, 500, httpapi.StatusOf("NO_SUCH_CODE"))
}

func TestErrorEnvelopes(t *testing.T) {
	t.Parallel()
	s := setup(t)

	t.Run("unknown route is NOT_FOUND", func(t *testing.T) {
		r := s.call(t, http.MethodGet, "/no/such/route", "", nil)
		require.Equal(t, http.StatusNotFound, r.status)
		require.Equal(t, core.CodeNotFound, r.errorBody(t).Code)
	})
	t.Run("unknown route under /v1 with a token is NOT_FOUND", func(t *testing.T) {
		r := s.call(t, http.MethodGet, "/v1/no-such-thing", s.operator, nil)
		require.Equal(t, http.StatusNotFound, r.status)
		require.Equal(t, core.CodeNotFound, r.errorBody(t).Code)
	})
	t.Run("wrong method is 405 METHOD_NOT_ALLOWED with Allow", func(t *testing.T) {
		r := s.call(t, http.MethodPost, "/healthz", "", "{}")
		require.Equal(t, http.StatusMethodNotAllowed, r.status)
		require.Equal(t, core.CodeMethodNotAllowed, r.errorBody(t).Code)
		require.Contains(t, r.header.Get("Allow"), http.MethodGet)
	})
	t.Run("body over the limit by Content-Length is 413 INVALID_ARGUMENT", func(t *testing.T) {
		big := `{"tenant":"` + strings.Repeat("a", 8<<10) + `"}`
		r := s.call(t, http.MethodPost, "/v1/tokens", s.operator, big)
		require.Equal(t, http.StatusRequestEntityTooLarge, r.status)
		require.Equal(t, core.CodeInvalidArgument, r.errorBody(t).Code)
	})
	t.Run("chunked body over the limit is 413 INVALID_ARGUMENT", func(t *testing.T) {
		big := `{"tenant":"` + strings.Repeat("a", 8<<10) + `"}`
		// A reader of unknown length makes the client send it chunked, so
		// only reading the body can find it too large.
		req, err := http.NewRequest(http.MethodPost, s.url+"/v1/tokens", io.MultiReader(strings.NewReader(big)))
		require.NoError(t, err)
		require.EqualValues(t, 0, req.ContentLength)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+s.operator)
		r := s.do(t, req)
		require.Equal(t, http.StatusRequestEntityTooLarge, r.status, "body: %s", r.body)
		require.Equal(t, core.CodeInvalidArgument, r.errorBody(t).Code)
	})
	t.Run("unknown JSON field is 400 INVALID_ARGUMENT naming it", func(t *testing.T) {
		r := s.call(t, http.MethodPost, "/v1/tokens", s.operator,
			`{"tenant":"acme","identity":"ci","role":"member","rol":"viewer"}`)
		require.Equal(t, http.StatusBadRequest, r.status)
		e := r.errorBody(t)
		require.Equal(t, core.CodeInvalidArgument, e.Code)
		require.Contains(t, e.Message, `"rol"`)
	})
	t.Run("missing token is 401 with WWW-Authenticate", func(t *testing.T) {
		r := s.call(t, http.MethodGet, "/v1/whoami", "", nil)
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Equal(t, core.CodeUnauthenticated, r.errorBody(t).Code)
		require.True(t, strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer"), r.header)
	})
	t.Run("malformed Authorization is 401", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, s.url+"/v1/whoami", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Basic dXNlcjpwYXNz")
		r := s.do(t, req)
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Equal(t, core.CodeUnauthenticated, r.errorBody(t).Code)
	})
	t.Run("two Authorization headers are 401, even with a good token first", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, s.url+"/v1/whoami", nil)
		require.NoError(t, err)
		req.Header.Add("Authorization", "Bearer "+s.operator)
		req.Header.Add("Authorization", "Bearer bc_someone-else")
		r := s.do(t, req)
		require.Equal(t, http.StatusUnauthorized, r.status, "%s", r.body)
		require.Contains(t, r.errorBody(t).Message, "more than one Authorization header")
	})
	t.Run("unknown token is 401 invalid_token", func(t *testing.T) {
		r := s.call(t, http.MethodGet, "/v1/whoami", "bc_not-a-real-token", nil)
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Equal(t, core.CodeUnauthenticated, r.errorBody(t).Code)
		require.Contains(t, r.header.Get("WWW-Authenticate"), `error="invalid_token"`)
	})
	t.Run("HEAD of an unknown route has the status and no body", func(t *testing.T) {
		r := s.call(t, http.MethodHead, "/no/such/route", "", nil)
		require.Equal(t, http.StatusNotFound, r.status)
		require.Empty(t, r.body)
	})
}

// Failures nobody classified must be a generic 500 that leaks nothing, and
// must be logged with the request id and the real cause.
func TestUnclassifiedErrorsAre500AndLogged(t *testing.T) {
	t.Parallel()
	const secret = "password=hunter2 host=10.1.2.3"
	s := setup(t, func(r httpapi.Router) {
		r.Echo.GET("/test/error", func(echo.Context) error { return errors.New(secret) })
		r.Echo.GET("/test/panic", func(echo.Context) error { panic(secret) })
		r.Echo.GET("/test/conflict", func(echo.Context) error {
			return core.Wrap(core.CodeConflict, errors.New(secret), "node n1 changed; retry with its new version")
		})
		r.Echo.GET("/test/echo500", func(echo.Context) error {
			return echo.NewHTTPError(http.StatusInternalServerError, secret)
		})
	})

	for _, path := range []string{"/test/error", "/test/panic", "/test/echo500"} {
		t.Run(path, func(t *testing.T) {
			r := s.call(t, http.MethodGet, path, "", nil)
			require.Equal(t, http.StatusInternalServerError, r.status)
			e := r.errorBody(t)
			require.Equal(t, core.CodeInternal, e.Code)
			require.NotContains(t, string(r.body), "hunter2")
			rid := r.header.Get(echo.HeaderXRequestID)
			require.NotEmpty(t, rid)
			require.Contains(t, e.Message, rid, "the caller gets the request id to quote")
			logged := logLines(t, s.logs.String(), rid)
			require.True(t, hasLine(logged, func(l map[string]any) bool {
				return l["msg"] == "request failed" && strings.Contains(l["err"].(string), "hunter2")
			}), "the cause is logged with the request id: %v", logged)
		})
	}
	t.Run("panic is logged with its stack", func(t *testing.T) {
		r := s.call(t, http.MethodGet, "/test/panic", "", nil)
		logged := logLines(t, s.logs.String(), r.header.Get(echo.HeaderXRequestID))
		require.True(t, hasLine(logged, func(l map[string]any) bool {
			stack, _ := l["stack"].(string)
			return strings.Contains(stack, "goroutine")
		}), "%v", logged)
	})
	t.Run("classified error keeps its message but not its cause", func(t *testing.T) {
		r := s.call(t, http.MethodGet, "/test/conflict", "", nil)
		require.Equal(t, http.StatusConflict, r.status)
		e := r.errorBody(t)
		require.Equal(t, core.CodeConflict, e.Code)
		require.Equal(t, "node n1 changed; retry with its new version", e.Message)
		require.NotContains(t, string(r.body), "hunter2")
	})
}
