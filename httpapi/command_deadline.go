package httpapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// DefaultCommandTimeout bounds a state-changing /v1 request when
// Deps.CommandTimeout is zero.
const DefaultCommandTimeout = 10 * time.Second

// unavailableRetryAfter is the Retry-After, in seconds, of a 503
// UNAVAILABLE that did not set its own.
const unavailableRetryAfter = "1"

// commandDeadline gives every state-changing request on /v1 (POST, PUT,
// PATCH, DELETE) a deadline of timeout. The request context already ends
// when the client disconnects; pgx cancels the running query on either,
// the command's transaction rolls back, and the error handler answers 503
// UNAVAILABLE with Retry-After. Reads and event streams are left alone
// (streams have their own lifetime limit).
func commandDeadline(timeout time.Duration) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if !isCommandMethod(req.Method) || !isV1Path(req.URL.Path) {
				return next(c)
			}
			ctx, cancel := context.WithTimeout(req.Context(), timeout)
			defer cancel()
			c.SetRequest(req.WithContext(ctx))
			return next(c)
		}
	}
}

func isCommandMethod(m string) bool {
	switch m {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

func isV1Path(p string) bool { return p == "/v1" || strings.HasPrefix(p, "/v1/") }
