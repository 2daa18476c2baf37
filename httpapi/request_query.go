package httpapi

import (
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/core"
)

// strictQuery refuses a request whose query string does not parse: a pair
// with a malformed percent-escape or a semicolon. net/url drops such pairs
// silently, so without this `?after=%zz` or `?after=a;b` would read as no
// cursor at all and answer the first page instead of an error.
func strictQuery() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if raw := c.Request().URL.RawQuery; raw != "" {
				if _, err := url.ParseQuery(raw); err != nil {
					return core.Errorf(core.CodeInvalidArgument, "malformed query string: %v", err)
				}
			}
			return next(c)
		}
	}
}
