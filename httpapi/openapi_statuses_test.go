package httpapi_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/bettercompute/compute/docs"
)

// Every operation documents the statuses any route can answer whatever
// its handler does: 405 for a method the path lacks (the router answers
// it, with Allow), and, for an operation that takes a body, 415 for a body
// that is not JSON. A client generated from the spec then knows them.
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
				require.Contains(t, op.Responses, "415", "%s %s takes a body but documents no 415", method, path)
			}
			checked++
		}
	}
	require.Greater(t, checked, 40)
}
