package projections_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/projections"
)

// requireNodesMatch fails unless the fleet read model agrees with the
// write model, by the comparison of `compute check`: every node's state,
// no-schedule reasons, conditions, scalars, cordon, taints and version,
// and every device.
func (f *fixture) requireNodesMatch(t *testing.T) {
	t.Helper()
	checks := f.checkAgainstWriteModel(t)
	requireAgrees(t, checks, "rm_fleet_nodes")
	requireAgrees(t, checks, "rm_fleet_devices")
}

// Liveness, drain, retire and inventory events keep the node read model's
// state, no-schedule reasons and conditions equal to the write model's,
// live and rebuilt.
func TestNodeStatusProjected(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	f.node(t, "n2", exclusive)
	f.node(t, "n3")
	sweep := func(d time.Duration) {
		t.Helper()
		err := commandstest.SweepLiveness(f.ctx, f.h)
		require.NoError(t, err)
		for ; d > 0; d -= commands.LivenessSweepEvery {
			f.d.AdvanceSimClock(t, min(d, commands.LivenessSweepEvery))
			err := commandstest.SweepLiveness(f.ctx, f.h)
			require.NoError(t, err)
		}
	}
	for _, id := range []string{"n1", "n2"} {
		_, err := f.h.JoinNode(f.ctx, operator, id)
		require.NoError(t, err)
	}
	gw, err := lease.Acquire(f.ctx, f.d.Q, "gateway:gw1", "gw1-process", lease.GatewayTTL)
	require.NoError(t, err)
	s, err := f.h.NodeSessions().OpenNodeSession(f.ctx, commands.OpenNodeSession{NodeID: "n1", Gateway: gw, GatewayID: "gw1", JournalID: "j1"})
	require.NoError(t, err)
	_, err = f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{GPUs: []commands.ReportedGPU{
		{UUID: "GPU-n1-1", Model: "a100", MemoryMB: 81920}, {UUID: "GPU-n1-9", Model: "a100", MemoryMB: 81920}}})
	require.NoError(t, err)
	_, err = f.h.DrainNode(f.ctx, operator, commands.DrainNode{NodeID: "n1"})
	require.NoError(t, err)
	f.catchUp(t)
	f.requireNodesMatch(t)

	require.NoError(t, f.h.NodeSessions().CloseNodeSession(f.ctx, "n1", s.Epoch, 0))
	sweep(commands.NoSessionAfter)
	_, err = f.h.RetireNode(f.ctx, operator, commands.RetireNode{NodeID: "n3"})
	require.NoError(t, err)
	f.catchUp(t)
	f.requireNodesMatch(t)
	n1, err := f.d.Q.RmFleetNodeGet(f.ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, []string{"draining", "unreachable"}, n1.NoScheduleReasons)
	devices, err := f.d.Q.RmFleetDeviceListByNode(f.ctx, "n1")
	require.NoError(t, err)
	health := map[string]string{}
	for _, d := range devices {
		health[d.ID] = d.Health
	}
	require.Equal(t, map[string]string{"GPU-n1-0": commands.HealthMissing, "GPU-n1-1": commands.HealthHealthy,
		"GPU-n1-9": commands.HealthHealthy}, health)

	live, err := f.d.Q.RmFleetNodeListAll(f.ctx)
	require.NoError(t, err)
	_, err = projections.Rebuild(f.ctx, f.d.Pool, projections.NameFleet)
	require.NoError(t, err)
	rebuilt, err := f.d.Q.RmFleetNodeListAll(f.ctx)
	require.NoError(t, err)
	require.Equal(t, live, rebuilt, "rebuilt nodes equal the live ones")
}
