package httpapi

import (
	"strings"

	"github.com/labstack/echo/v4"
)

// routeOf is the request's method and route as docs/openapi.yaml writes
// them ("POST /v1/webhook-endpoints/{id}/rotate-secret"), for messages to
// clients. Echo's own pattern (c.Path()) spells a parameter ":id", which no
// document of the API does: an error about rotate-secret named a path a
// client could find nowhere. Logs, metrics and traces keep echo's pattern,
// their established label.
func routeOf(c echo.Context) string {
	segs := strings.Split(c.Path(), "/")
	for i, s := range segs {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			segs[i] = "{" + name + "}"
		}
	}
	return c.Request().Method + " " + strings.Join(segs, "/")
}
