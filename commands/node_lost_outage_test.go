package commands_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
)

// A node's absence counts towards its pool's lostAfter only while the
// control plane was up to receive it: a provider node unreachable for 5
// minutes before a two-hour outage of the control plane is still
// unreachable at the first sweep after the outage (its daemon could not
// reconnect meanwhile), and is lost once it has stayed away lostAfter from
// the recovery. Counted from unreachable_since, the first sweep marked it
// lost, and so did its per-node reconciler.
func TestNodeLostIgnoresControlPlaneOutage(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const lostAfter = 10 * time.Minute
	_, err := f.h.CreatePool(f.ctx, operator, commands.CreatePool{ID: "cloud", SiteID: commandstest.Site,
		Kind: commands.PoolProvider, LostAfter: lostAfter})
	require.NoError(t, err)
	_, err = f.h.RegisterNode(f.ctx, operator, commands.RegisterNode{ID: "c1", PoolID: "cloud",
		VCPU: 64, MemoryMB: 512 * 1024, DiskGB: 2000})
	require.NoError(t, err)
	nodeState := func() core.State {
		t.Helper()
		var s string
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT state FROM nodes WHERE id = 'c1'").Scan(&s))
		return core.State(s)
	}
	d := f.connect(t, "c1", "j1", 0)
	require.NoError(t, commandstest.SweepLiveness(f.ctx, f.h)) // the controller heartbeat
	require.NoError(t, f.h.NodeSessions().CloseNodeSession(f.ctx, "c1", d.epoch, 0))
	f.sweepFor(t, commands.NoSessionAfter+2*commands.LivenessSweepEvery)
	require.Equal(t, core.NodeUnreachable, nodeState())
	f.upFor(t, 5*time.Minute)

	// The control plane is down for two hours: nobody sweeps.
	f.d.AdvanceSimClock(t, 2*time.Hour)
	// The node's own reconciler refuses while the heartbeat is stale.
	_, err = commandstest.ReconcileLiveness(f.ctx, f.h, "c1")
	require.NoError(t, err)
	require.Equal(t, core.NodeUnreachable, nodeState(), "no judgement before the sweep")
	require.NoError(t, commandstest.SweepLiveness(f.ctx, f.h))
	require.Equal(t, core.NodeUnreachable, nodeState(), "the outage does not count as the node's absence")
	_, err = commandstest.ReconcileLiveness(f.ctx, f.h, "c1")
	require.NoError(t, err)
	require.Equal(t, core.NodeUnreachable, nodeState(), "nor for its per-node reconciler")
	require.Zero(t, f.countEvents(t, core.EventNodeLost))

	f.upFor(t, lostAfter-time.Minute)
	require.Equal(t, core.NodeUnreachable, nodeState(), "not yet away lostAfter since the recovery")
	require.Zero(t, f.countEvents(t, core.EventNodeLost))

	f.upFor(t, 2*time.Minute)
	require.Equal(t, core.NodeLost, nodeState())
	require.Equal(t, 1, f.countEvents(t, core.EventNodeLost))
	// node.lost says why it came later than unreachableSince + lostAfter:
	// the count started at the end of the outage.
	var unreachableSince, outageEnded time.Time
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT s.unreachable_since, w.outage_ended_at
		FROM node_sessions s, node_liveness_sweeps w WHERE s.node_id = 'c1' AND w.id = 1`).Scan(&unreachableSince, &outageEnded))
	lost := f.lostEvent(t, "c1")
	require.True(t, lost.UnreachableSince.Equal(unreachableSince), "unreachableSince %s, want %s", lost.UnreachableSince, unreachableSince)
	require.Equal(t, lostAfter.Seconds(), lost.LostAfterSeconds)
	require.NotNil(t, lost.CountedFrom, "countedFrom: the outage moved the count")
	require.True(t, lost.CountedFrom.Equal(outageEnded), "countedFrom %s, want the outage's end %s", lost.CountedFrom, outageEnded)
	require.True(t, lost.CountedFrom.After(lost.UnreachableSince.Add(2*time.Hour)))
	f.requireInvariants(t)
}

// lostEvent is the data of the node's one node.lost event.
func (f *fixture) lostEvent(t *testing.T, node string) core.NodeLostEventData {
	t.Helper()
	var data []byte
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT data FROM outbox WHERE type = $1 AND subject = $2`,
		core.EventNodeLost, core.NodeSubject(node)).Scan(&data))
	var d core.NodeLostEventData
	require.NoError(t, json.Unmarshal(data, &d))
	return d
}
