package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/docs"
)

// openAPI serves the embedded OpenAPI description, so clients and tooling
// read the contract of the exact build they talk to. application/yaml is the
// registered media type (RFC 9512).
func openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", docs.OpenAPI)
}
