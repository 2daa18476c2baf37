package gateway_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/wire"
)

// nodes.release then nodes.retire: the retire closes the session the
// release's unassign would reach the daemon through, so a connected node
// is retired only once its daemon carried the unassign out; otherwise the
// released workload runs on until its old end.
func TestRetireWaitsForAConnectedDaemonsUnassigns(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	g, url := f.liveGateway("gw1")
	d, _ := f.wireDaemon(url, cred.Token)
	f.requireState("n1", core.NodeConnected)

	f.activeReservation(t)
	_, err := g.Dispatch(f.ctx, "n1")
	require.NoError(t, err)
	assign := d.next()
	require.Equal(t, wire.CommandKindAssign, assign.CommandKind)
	d.send(wire.Message{Type: wire.TypeCommandResult, CommandID: assign.CommandID, State: "succeeded",
		ObservedGeneration: 1})
	require.Eventually(t, func() bool { return f.jobState(assign.CommandID) == "succeeded" }, 10*time.Second, 5*time.Millisecond)

	_, err = f.h.ReleaseNode(f.ctx, operator, commands.ReleaseNode{NodeID: "n1"})
	require.NoError(t, err)
	_, err = f.h.RetireNode(f.ctx, operator, commands.RetireNode{NodeID: "n1"})
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "the released allocation's unassign has not reached the daemon: %v", err)
	f.requireState("n1", core.NodeConnected)

	_, err = g.Dispatch(f.ctx, "n1")
	require.NoError(t, err)
	unassign := d.next()
	require.Equal(t, wire.CommandKindUnassign, unassign.CommandKind, "the session is still there to carry it")
	d.send(wire.Message{Type: wire.TypeCommandResult, CommandID: unassign.CommandID, State: "succeeded",
		ObservedGeneration: 2})
	require.Eventually(t, func() bool { return f.jobState(unassign.CommandID) == "succeeded" }, 10*time.Second, 5*time.Millisecond)

	ret, err := f.h.RetireNode(f.ctx, operator, commands.RetireNode{NodeID: "n1"})
	require.NoError(t, err)
	require.Equal(t, string(core.NodeRetired), ret.State)
	f.requireInvariants()
}
