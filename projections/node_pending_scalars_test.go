package projections_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/internal/lease"
)

// A shrink of a node's vCPU that waits for its bookings reaches the read
// model through node.inventory_reconciled (pendingScalars) and leaves it
// with the report that ends it (a grow); `compute check` compares it with
// the write model's, and finds a read model that lost it.
func TestNodePendingScalarsProjected(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	_, err := f.h.JoinNode(f.ctx, operator, "n1")
	require.NoError(t, err)
	gw, err := lease.Acquire(f.ctx, f.d.Q, "gateway:gw1", "gw1-process", lease.GatewayTTL)
	require.NoError(t, err)
	s, err := f.h.NodeSessions().OpenNodeSession(f.ctx, commands.OpenNodeSession{NodeID: "n1", Gateway: gw,
		GatewayID: "gw1", JournalID: "j1"})
	require.NoError(t, err)
	f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: 10})
	report := func(vcpu int64) {
		t.Helper()
		_, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{
			GPUs: []commands.ReportedGPU{{UUID: "GPU-n1-0", Model: "a100", MemoryMB: 81920},
				{UUID: "GPU-n1-1", Model: "a100", MemoryMB: 81920}},
			Scalars: &commands.ReportedScalars{VCPU: &vcpu}})
		require.NoError(t, err)
		f.catchUp(t)
	}

	report(4)
	n, err := f.d.Q.RmFleetNodeGet(f.ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, int64(64), n.Vcpu)
	require.NotNil(t, n.VcpuPending)
	require.Equal(t, int64(4), *n.VcpuPending)
	require.Nil(t, n.MemoryMbPending)
	f.requireNodesMatch(t)

	// A read model that lost it diverges.
	_, err = f.d.Pool.Exec(f.ctx, `UPDATE rm_fleet_nodes SET vcpu_pending = NULL WHERE id = 'n1'`)
	require.NoError(t, err)
	c := f.checkAgainstWriteModel(t)["rm_fleet_nodes"]
	require.Equal(t, int64(1), c.Diverging)
	_, err = f.d.Pool.Exec(f.ctx, `UPDATE rm_fleet_nodes SET vcpu_pending = 4 WHERE id = 'n1'`)
	require.NoError(t, err)

	report(96) // a grow: adopted, and the shrink ends
	n, err = f.d.Q.RmFleetNodeGet(f.ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, int64(96), n.Vcpu)
	require.Nil(t, n.VcpuPending)
	f.requireNodesMatch(t)
}
