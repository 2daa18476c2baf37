package httpapi_test

import (
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/docs"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/queries"
	"github.com/bettercompute/compute/webhook"
)

// The spec and the server must agree: every registered route is described
// in docs/openapi.yaml with the same method, and the spec promises no
// route the server lacks.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	pg := pgtest.New(t)
	// Every feature's routes, as main passes them to New: a feature left
	// out here could drift from the spec unnoticed.
	features := httpapi.Features{
		Commands:    commands.New(pg.Pool, commands.Config{}),
		Queries:     queries.New(pg.Pool),
		Broker:      eventstream.NewBroker(pg.Pool, eventstream.BrokerOptions{}),
		EventReader: eventstream.NewReader(pg.Pool),
		Webhooks:    webhook.New(pg.Pool, commands.New(pg.Pool, commands.Config{}), webhook.Config{}, nil),
	}.Routes()
	e := httpapi.New(httpapi.Deps{
		Pool: pg.Pool, Commands: commands.New(pg.Pool, commands.Config{}), Clock: clock.New(nil), Auth: authn.New(pg.Pool, 0), Logger: slog.New(slog.DiscardHandler),
	}, features...)

	param := regexp.MustCompile(`:([A-Za-z0-9_]+)`)
	var registered []string
	for _, r := range e.Routes() {
		if r.Method == echo.RouteNotFound {
			continue // echo's catch-all for group middleware, not an API route
		}
		registered = append(registered, r.Method+" "+param.ReplaceAllString(r.Path, "{$1}"))
	}

	var spec struct {
		OpenAPI string                          `yaml:"openapi"`
		Paths   map[string]map[string]yaml.Node `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(docs.OpenAPI, &spec))
	require.True(t, strings.HasPrefix(spec.OpenAPI, "3.1"), spec.OpenAPI)
	operations := map[string]bool{"get": true, "put": true, "post": true, "delete": true,
		"patch": true, "head": true, "options": true, "trace": true}
	var described []string
	for path, item := range spec.Paths {
		for key := range item {
			if operations[key] {
				described = append(described, strings.ToUpper(key)+" "+path)
			}
		}
	}

	// A HEAD route answers as its GET without the body (RFC 9110, 9.3.2):
	// the spec describes the GET and says so.
	registered = slices.DeleteFunc(registered, func(r string) bool {
		path, ok := strings.CutPrefix(r, "HEAD ")
		return ok && slices.Contains(described, "GET "+path)
	})
	slices.Sort(registered)
	slices.Sort(described)
	require.NotEmpty(t, registered)
	require.Equal(t, described, registered, "routes registered on the server vs operations in docs/openapi.yaml")
}
