package gateway_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
)

// register registers a node with one GPU in pool without joining it.
func (f *fixture) register(h *commands.Handlers, id, pool string) {
	f.t.Helper()
	_, err := h.RegisterNode(f.ctx, operator, commands.RegisterNode{ID: id, PoolID: pool, VCPU: 8, MemoryMB: 8192,
		DiskGB: 100, GPUs: []commands.GPUInventory{{UUID: "GPU-" + id + "-0", Model: "h100", MemoryMB: 81920,
			Layout: core.GPULayout{Mode: core.GPUExclusive}}}})
	require.NoError(f.t, err)
}

// A node registered but never joined becomes unreachable counted from its
// registration; its daemon connecting later brings it back.
func TestNeverJoinedBecomesUnreachableFromRegistration(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.advance(time.Hour) // time before the registration does not count
	f.register(f.h, "n1", "metal")
	f.requireState("n1", core.NodeRegistered)
	next, err := commandstest.ReconcileLiveness(f.ctx, f.s, "n1")
	require.NoError(t, err)
	require.Equal(t, commands.NoSessionAfter, next)

	f.advance(commands.NoSessionAfter - time.Second)
	f.requireState("n1", core.NodeRegistered)
	f.advance(time.Second)
	f.requireState("n1", core.NodeUnreachable)
	require.Equal(t, []string{core.NoScheduleUnreachable}, f.node("n1").NoScheduleReasons)
	conds := f.conditions("n1")
	require.Len(t, conds, 1)
	require.Equal(t, "NeverJoined", conds[0].Reason)
	require.Equal(t, 1, f.events(core.EventNodeUnreachable, "n1"))

	// It joins and connects: back in placement.
	_, err = f.s.JoinNode(f.ctx, operator, "n1")
	require.NoError(t, err)
	f.gateway("gw1")
	f.open("n1", "gw1", "j1")
	f.requireState("n1", core.NodeConnected)
	require.Empty(t, f.node("n1").NoScheduleReasons)
	f.requireInvariants()
}

// A join restarts the clock of a registered node: it counts from the
// newest join, not from the registration.
func TestJoinRestartsTheRegistrationClock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.register(f.h, "n1", "metal")
	f.advance(30 * time.Second)
	_, err := f.s.JoinNode(f.ctx, operator, "n1")
	require.NoError(t, err)
	f.advance(commands.NoSessionAfter - time.Second)
	f.requireState("n1", core.NodeRegistered)
	f.advance(time.Second)
	f.requireState("n1", core.NodeUnreachable)
	require.Equal(t, "NeverConnected", f.conditions("n1")[0].Reason)
}

// With NodesWithoutDaemons (benchmarks, fault tests), a node that never
// joins is never judged; one that joins is.
func TestNodesWithoutDaemons(t *testing.T) {
	t.Parallel()
	f := setup(t)
	bench := commands.New(f.d.Pool, commands.Config{Test: commands.TestConfig{NodesWithoutDaemons: true}})
	f.register(bench, "n1", "metal")
	f.register(bench, "n2", "metal")
	_, err := f.s.JoinNode(f.ctx, operator, "n2")
	require.NoError(t, err)
	f.advance(10 * time.Minute)
	f.requireState("n1", core.NodeRegistered)
	f.requireState("n2", core.NodeUnreachable)
}
