package httpapi

import (
	"strings"

	"github.com/labstack/echo/v4"
)

// ContentSecurityPolicy is the policy of every answer of the API listener
// but the console's pages, which set their own (console.ContentSecurityPolicy):
// an answer of the API is JSON, YAML, metrics or an event stream, never a
// page, so a browser that is led to open one as a document may run, load
// or frame nothing of it, nor be framed by anyone.
const ContentSecurityPolicy = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// responseHeaders sets the security headers every answer of the API
// listener carries, errors included, before a handler runs (a handler may
// still replace them, as the console does with its own policy):
//
//   - X-Content-Type-Options: nosniff, so that no browser reads a JSON
//     body, which may quote a tenant's text, as HTML or script;
//   - Content-Security-Policy (ContentSecurityPolicy) and, for browsers
//     that predate frame-ancestors, X-Frame-Options: DENY: nothing of an
//     answer runs, loads or is framed (no clickjacking of a page either);
//   - Referrer-Policy: no-referrer: a browser following a link out of an
//     answer sends no address of this server along;
//   - Cache-Control: no-store on /v1: its answers are one token's view of
//     live state, and some carry secrets shown once (a created API token,
//     a join token, a node credential, a webhook signing secret), which no
//     shared or browser cache should keep or serve to anyone else.
func responseHeaders() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Response().Header()
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Content-Security-Policy", ContentSecurityPolicy)
			h.Set("X-Frame-Options", "DENY")
			h.Set("Referrer-Policy", "no-referrer")
			if p := c.Request().URL.Path; p == "/v1" || strings.HasPrefix(p, "/v1/") {
				h.Set("Cache-Control", "no-store")
			}
			return next(c)
		}
	}
}
