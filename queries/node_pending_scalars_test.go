package queries_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/projections"
)

// An operator who restarts a busy node's daemon with a smaller --vcpu
// reads the shrink that waits on the node itself, beside the allocatable
// it will replace (pendingAllocatable), not only in the words of its
// ScalarsMismatch condition: in GET /v1/nodes/{id} and the list, after
// the projection applied node.inventory_reconciled, and the same after a
// rebuild. Once the bookings fit and the node's resync adopts it, the
// allocatable is the new value and nothing is pending.
func TestNodeShowsPendingShrink(t *testing.T) {
	t.Parallel()
	f := setup(t) // the pool's cpu ratio is 1
	f.node(t, "n1", 2)
	_, err := f.h.JoinNode(f.ctx, operator, "n1")
	require.NoError(t, err)
	gw, err := lease.Acquire(f.ctx, f.d.Q, "gateway:gw1", "gw1-process", lease.GatewayTTL)
	require.NoError(t, err)
	s, err := f.h.NodeSessions().OpenNodeSession(f.ctx, commands.OpenNodeSession{NodeID: "n1", Gateway: gw,
		GatewayID: "gw1", JournalID: "j1"})
	require.NoError(t, err)
	held, err := f.h.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, VCPU: 10,
		Start: at(0), End: at(2)})
	require.NoError(t, err)
	require.Equal(t, "n1", held.Reservation.NodeID)

	vcpu := int64(4)
	_, err = f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", s.Epoch, commands.NodeInventory{
		GPUs: []commands.ReportedGPU{{UUID: "GPU-n1-0", Model: "a100", MemoryMB: 81920},
			{UUID: "GPU-n1-1", Model: "a100", MemoryMB: 81920}},
		Scalars: &commands.ReportedScalars{VCPU: &vcpu}})
	require.NoError(t, err)
	n := f.readNode(t, "n1")
	require.Equal(t, int64(64), n.VCPU.Allocatable, "the record stays until the bookings fit")
	require.Equal(t, &vcpu, n.VCPU.PendingAllocatable)
	require.Nil(t, n.MemoryMB.PendingAllocatable)
	require.Nil(t, n.DiskGB.PendingAllocatable)
	raw, err := json.Marshal(n)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"vcpu":{"allocatable":64,"pendingAllocatable":4,"capacity":64,"allocated":10}`)
	require.NotContains(t, string(raw), `"memoryMb":{"allocatable":524288,"pendingAllocatable"`)
	requireRebuildKeepsNodes(t, f)

	// The booking ends; the node's resync adopts the shrink.
	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: held.Reservation.ID})
	require.NoError(t, err)
	f.d.AdvanceSimClock(t, commands.DefaultNodeResyncEvery)
	w := workqueue.NewWorker(f.d.Pool, "w", nil, nil)
	w.Handle(commands.KindNodeResync, f.h.Reconcilers().ByKind()[commands.KindNodeResync])
	_, err = w.RunOnce(f.ctx)
	require.NoError(t, err)
	n = f.readNode(t, "n1")
	require.Equal(t, int64(4), n.VCPU.Allocatable)
	require.Nil(t, n.VCPU.PendingAllocatable, "adopted: nothing waits")
	requireRebuildKeepsNodes(t, f)
}

// requireRebuildKeepsNodes fails unless rebuilding the fleet read model
// gives the node rows the projection wrote live.
func requireRebuildKeepsNodes(t *testing.T, f *fixture) {
	t.Helper()
	live, err := f.d.Q.RmFleetNodeListAll(f.ctx)
	require.NoError(t, err)
	_, err = projections.Rebuild(f.ctx, f.d.Pool, projections.NameFleet)
	require.NoError(t, err)
	rebuilt, err := f.d.Q.RmFleetNodeListAll(f.ctx)
	require.NoError(t, err)
	require.Equal(t, live, rebuilt, "rebuilt nodes equal the live ones")
}
