package httpapi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/bettercompute/compute/docs"
)

// Every operation documents the statuses any route can answer whatever
// its handler does: 405 for a method the path lacks (the router answers
// it, with Allow), and, for an operation that takes a body, 413 for one
// over the limit and 415 for one that is not JSON. Every /v1 operation
// also refuses a query parameter it does not take or a body where it takes
// none (400), a token it cannot authenticate (401), a caller over a limit
// (429), and may fail (500) or time out (503). A client generated from the
// spec then knows them: one that decodes strictly throws on a status its
// operation does not list.
func TestOpenAPIDocumentsGenericStatuses(t *testing.T) {
	t.Parallel()
	type operation struct {
		RequestBody any            `yaml:"requestBody"`
		Responses   map[string]any `yaml:"responses"`
	}
	var spec struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	require.NoError(t, yaml.Unmarshal(docs.OpenAPI, &spec))
	methods := map[string]bool{"get": true, "put": true, "post": true, "delete": true, "patch": true}
	checked := 0
	for path, item := range spec.Paths {
		for method, node := range item {
			if !methods[method] {
				continue
			}
			var op operation
			require.NoError(t, node.Decode(&op), "%s %s", method, path)
			require.Contains(t, op.Responses, "405", "%s %s documents no 405", method, path)
			if op.RequestBody != nil {
				for _, status := range []string{"413", "415"} {
					require.Contains(t, op.Responses, status, "%s %s takes a body but documents no %s", method, path, status)
				}
			}
			if strings.HasPrefix(path, "/v1/") {
				for _, status := range []string{"400", "401", "429", "500", "503"} {
					require.Contains(t, op.Responses, status, "%s %s documents no %s", method, path, status)
				}
			}
			checked++
		}
	}
	require.Greater(t, checked, 40)
}
