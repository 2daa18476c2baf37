package httpapi

import (
	"strings"

	"github.com/labstack/echo/v4"
)

// responseHeaders sets the headers every answer of the API carries before
// a handler runs (a handler may still replace them):
//
//   - X-Content-Type-Options: nosniff on everything, so that no browser
//     reads a JSON body, which may quote a tenant's text, as HTML or script;
//   - Cache-Control: no-store on /v1: its answers are one token's view of
//     live state (and some carry secrets, such as a created token), which
//     no shared or browser cache should keep or serve to anyone else.
func responseHeaders() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Response().Header()
			h.Set("X-Content-Type-Options", "nosniff")
			if p := c.Request().URL.Path; p == "/v1" || strings.HasPrefix(p, "/v1/") {
				h.Set("Cache-Control", "no-store")
			}
			return next(c)
		}
	}
}
