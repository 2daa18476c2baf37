package projections_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
)

// The fleet read model keeps each pool's workload network mode from its
// pool.created event.
func TestPoolWorkloadNetworkProjected(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.h.CreatePool(f.ctx, operator, commands.CreatePool{ID: "fra1-bridge", SiteID: "fra1",
		Kind: commands.PoolBareMetal, WorkloadNetwork: commands.WorkloadNetworkBridge})
	require.NoError(t, err)
	f.catchUp(t)
	pools, err := f.d.Q.RmFleetPoolListAll(f.ctx)
	require.NoError(t, err)
	modes := map[string]string{}
	for _, p := range pools {
		modes[p.ID] = p.WorkloadNetwork
	}
	require.Equal(t, map[string]string{"fra1-gpu": "none", "fra1-bridge": "bridge"}, modes)
}
