package httpapi

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/console"
)

// apiIndex is what GET / answers an API client: where things are, so that
// someone who points curl at the address the README gives learns where to
// go instead of reading a 404.
type apiIndex struct {
	API     string `json:"api"`
	OpenAPI string `json:"openapi"`
	Health  string `json:"health"`
	Console string `json:"console,omitempty"` // absent when this listener serves no console
}

// rootRoutes answers GET (and HEAD) / on the API listener, the address a
// person opens first. A browser (an Accept that names text/html) is sent
// to the web console with 302 when the server mounts it (some Routes
// registered console.Prefix); anything else, and a browser on a server
// without the console, gets the JSON index. It runs after every other
// Routes, so that it sees the console's routes.
func rootRoutes(r Router) {
	console := consolePath(r.Echo)
	h := func(c echo.Context) error {
		c.Response().Header().Add(echo.HeaderVary, echo.HeaderAccept)
		if console != "" && wantsHTML(c.Request()) {
			return c.Redirect(http.StatusFound, console)
		}
		return c.JSON(http.StatusOK, apiIndex{API: "/v1", OpenAPI: "/openapi.yaml", Health: "/healthz", Console: console})
	}
	r.Echo.GET("/", h)
	r.Echo.HEAD("/", h)
}

// consolePath is console.Prefix when a route serves it with GET, else "".
func consolePath(e *echo.Echo) string {
	for _, rt := range e.Routes() {
		if rt.Method == http.MethodGet && (rt.Path == console.Prefix || rt.Path == console.Prefix+"*") {
			return console.Prefix
		}
	}
	return ""
}

// wantsHTML reports a request from a browser's address bar, which asks for
// text/html first; API clients ask for JSON or anything (*/*).
func wantsHTML(r *http.Request) bool {
	for _, accept := range r.Header.Values(echo.HeaderAccept) {
		for part := range strings.SplitSeq(accept, ",") {
			if mt, _, _ := strings.Cut(part, ";"); strings.EqualFold(strings.TrimSpace(mt), "text/html") {
				return true
			}
		}
	}
	return false
}
