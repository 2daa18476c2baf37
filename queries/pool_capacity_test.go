package queries_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/queries"
)

func (f *fixture) poolCapacity(t *testing.T) queries.PoolCapacity {
	t.Helper()
	f.catchUp(t, f.lastPosition(t))
	c, err := f.q.PoolCapacity(f.ctx, operator, "fra1-gpu", outbox.Position{})
	require.NoError(t, err)
	return c
}

// A retired node has left the pool for good: its node, scalars and GPUs
// leave the pool's capacity. A draining node's GPUs still exist but take no
// new bookings, so they are in the total and not schedulable.
func TestPoolCapacityLeavesOutRetiredNodes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 2)
	f.node(t, "n2", 1)
	f.node(t, "n3", 1)

	before := f.poolCapacity(t)
	require.Equal(t, int64(3), before.Nodes)
	require.Len(t, before.GPUs, 1)
	require.Equal(t, [2]int64{4, 4}, [2]int64{before.GPUs[0].Total, before.GPUs[0].Schedulable})
	perNode := before.VCPU.Capacity / 3
	require.Positive(t, perNode)

	_, err := f.h.RetireNode(f.ctx, operator, commands.RetireNode{NodeID: "n2"})
	require.NoError(t, err)
	_, err = f.h.DrainNode(f.ctx, operator, commands.DrainNode{NodeID: "n3"})
	require.NoError(t, err)

	after := f.poolCapacity(t)
	require.Equal(t, int64(2), after.Nodes, "n2 is retired")
	require.Equal(t, 2*perNode, after.VCPU.Capacity, "n2's vCPU are gone")
	require.Equal(t, 2*before.MemoryMB.Capacity/3, after.MemoryMB.Capacity)
	require.Equal(t, 2*before.DiskGB.Capacity/3, after.DiskGB.Capacity)
	require.Len(t, after.GPUs, 1)
	require.Equal(t, int64(3), after.GPUs[0].Total, "n1's two and draining n3's one")
	require.Equal(t, int64(2), after.GPUs[0].Schedulable, "n1's two: n3 is draining")
}
