package core_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// A model quota's key takes every model a GPU can have (core.ValidGPUModel),
// nvidia-smi's names with spaces first among them; anything else is
// INVALID_ARGUMENT saying what a key is.
func TestValidQuotaResource(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"gpu", "vcpu", "memory", "disk", "gpu:H100-80GB", "gpu:NVIDIA H100 80GB HBM3",
		"gpu:NVIDIA A100-SXM4-80GB", "gpu:Tesla V100-SXM2-16GB", "gpu:NVIDIA GeForce RTX 4090", "gpu:a=b/c",
		core.GPUModelQuota(strings.Repeat("H", core.MaxGPUModel))} {
		require.NoError(t, core.ValidQuotaResource(ok), ok)
		if m, isModel := strings.CutPrefix(ok, "gpu:"); isModel {
			require.NoError(t, core.ValidGPUModel(m), "a key the quota takes is a model a GPU can have")
		}
	}
	for _, bad := range []string{"", "gpus", "GPU", "gpu:", "gpu:H100\t80GB", "gpu:H100\n", "gpu:\x00",
		"gpu:\xff", "cpu", core.GPUModelQuota(strings.Repeat("H", core.MaxGPUModel+1))} {
		err := core.ValidQuotaResource(bad)
		require.Error(t, err, "%q", bad)
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err))
		require.Contains(t, err.Error(), "quota resource")
	}
}
