package cli

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/bettercompute/compute/client"
)

// Every error code the API's schema lists has the exit code docs/cli.md
// gives it, set on purpose rather than left to the HTTP status: a code
// added to the API without a row in exitCodesByKind fails here, so its
// exit code is chosen (and documented) before a script meets it.
// TENANT_SUSPENDED went without one, and exited 4 only by its 403.
func TestEveryErrorCodeOfTheAPIHasAnExitCode(t *testing.T) {
	t.Parallel()
	var spec struct {
		Components struct {
			Schemas struct {
				ErrorCode struct {
					Enum []string `yaml:"enum"`
				} `yaml:"ErrorCode"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	// Read from the tree, not through the docs package: the command line
	// imports only client and core (devtools/layers), its tests included.
	openapi, err := os.ReadFile("../../../docs/openapi.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(openapi, &spec))
	codes := spec.Components.Schemas.ErrorCode.Enum
	require.NotEmpty(t, codes, "the schema's ErrorCode enum")
	for _, code := range codes {
		_, ok := exitCodesByKind[client.ErrorCode(code)]
		require.True(t, ok, "%s has no exit code: add it to exitCodeOf, exitCodesByKind and docs/cli.md's table", code)
	}
}
