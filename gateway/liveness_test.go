package gateway_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
)

// A node that joined but never opened a session counts from its join.
func TestNeverConnectedBecomesUnreachableFromJoin(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.advance(time.Hour) // time before the join does not count
	f.join("n1", "metal")
	f.requireState("n1", core.NodeRegistered)

	f.advance(commands.NoSessionAfter - time.Second)
	f.requireState("n1", core.NodeRegistered)
	next, err := commandstest.ReconcileLiveness(f.ctx, f.s, "n1")
	require.NoError(t, err)
	require.Equal(t, time.Second, next, "the reconciler asks to run again exactly at the threshold")

	f.advance(time.Second)
	f.requireState("n1", core.NodeUnreachable)
	require.Equal(t, []string{core.NoScheduleUnreachable}, f.node("n1").NoScheduleReasons)
	conds := f.conditions("n1")
	require.Len(t, conds, 1)
	require.Equal(t, core.ConditionNodeUnreachable, conds[0].Type)
	require.Equal(t, "NeverConnected", conds[0].Reason)
	require.Equal(t, 1, f.events(core.EventNodeUnreachable, "n1"))
	f.requireInvariants()
}

// connected → disconnected on close (nothing released), → unreachable 40 s
// later, and a bare-metal node is never lost.
func TestClosedSessionTimingsBareMetal(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.join("n1", "metal")
	f.gateway("gw1")
	s := f.open("n1", "gw1", "j1")
	require.Equal(t, int64(1), s.Epoch)
	f.requireState("n1", core.NodeConnected)

	f.advance(10 * time.Minute) // a connected node stays connected
	f.requireState("n1", core.NodeConnected)

	// The gateway noticed the close 2 s before it reported it: the clock
	// starts at the close, not at the report.
	require.NoError(t, f.s.NodeSessions().CloseNodeSession(f.ctx, "n1", s.Epoch, 2*time.Second))
	f.requireState("n1", core.NodeDisconnected)
	require.Equal(t, "closed", *f.session("n1").CloseReason)

	f.advance(commands.NoSessionAfter - 2*time.Second - time.Second)
	f.requireState("n1", core.NodeDisconnected)
	f.advance(time.Second)
	f.requireState("n1", core.NodeUnreachable)
	require.Equal(t, "SessionClosed", f.conditions("n1")[0].Reason)

	// A day later (one jump: the sweep sees it as an outage, which only
	// touches nodes still disconnected).
	f.d.AdvanceSimClock(t, 24*time.Hour)
	f.advance(commands.LivenessSweepEvery)
	f.requireState("n1", core.NodeUnreachable) // never automatic for bare metal
	require.Equal(t, 0, f.events(core.EventNodeLost, "n1"))
	f.requireInvariants()
}

// unreachable → lost after the provider pool's lostAfter.
func TestProviderNodeLostAfterLostAfter(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.join("c1", "cloud")
	f.gateway("gw1")
	s := f.open("c1", "gw1", "j1")
	require.NoError(t, f.s.NodeSessions().CloseNodeSession(f.ctx, "c1", s.Epoch, 0))
	f.advance(commands.NoSessionAfter)
	f.requireState("c1", core.NodeUnreachable)

	f.advance(lostAfter - time.Second)
	f.requireState("c1", core.NodeUnreachable)
	f.advance(time.Second)
	f.requireState("c1", core.NodeLost)
	require.Equal(t, 1, f.events(core.EventNodeLost, "c1"))
	// No outage moved the count: node.lost leaves countedFrom out.
	var counted *string
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT data->>'countedFrom' FROM outbox WHERE type = $1 AND subject = $2",
		core.EventNodeLost, core.NodeSubject("c1")).Scan(&counted))
	require.Nil(t, counted)
	f.requireInvariants()
}

// A gateway's lease lapsing disconnects its nodes with the 120 s grace.
func TestGatewayLossGrace(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.join("n1", "metal")
	f.gateway("gw1")
	f.open("n1", "gw1", "j1")
	f.advance(time.Minute)
	f.killGateway("gw1") // last renewed now: the lease lapses 20 s later

	f.advance(19 * time.Second)
	f.requireState("n1", core.NodeConnected)
	f.advance(time.Second)
	f.requireState("n1", core.NodeDisconnected)
	sess := f.session("n1")
	require.Equal(t, "gateway-lost", *sess.CloseReason)
	require.Equal(t, "gateway-lost", sess.GraceReason)

	f.advance(commands.NoSessionAfter + commands.GatewayLostGrace - time.Second)
	f.requireState("n1", core.NodeDisconnected)
	f.advance(time.Second)
	f.requireState("n1", core.NodeUnreachable)
	require.Equal(t, "GatewayLost", f.conditions("n1")[0].Reason)
	f.requireInvariants()
}

// After a database or controller outage (no sweep for longer than the
// threshold), nodes without a session get 5 minutes from the recovery.
func TestOutageGrace(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.join("n1", "metal")
	f.join("n2", "metal")
	f.gateway("gw1")
	s1 := f.open("n1", "gw1", "j1")
	f.open("n2", "gw1", "j2")
	require.NoError(t, f.s.NodeSessions().CloseNodeSession(f.ctx, "n1", s1.Epoch, 0))
	f.advance(10 * time.Second)

	// The database is down for 50 s: nobody sweeps, nobody renews.
	f.d.AdvanceSimClock(t, 50*time.Second)
	// Before the sweep notices, the per-node reconciler refuses to judge.
	next, err := commandstest.ReconcileLiveness(f.ctx, f.s, "n1")
	require.NoError(t, err)
	require.Equal(t, commands.LivenessSweepEvery, next)
	f.requireState("n1", core.NodeDisconnected)

	require.NotEqual(t, "outage", f.session("n1").GraceReason)
	require.Nil(t, f.session("n2").CloseReason, "n2's session is open before the sweep")
	require.NoError(t, commandstest.SweepLiveness(f.ctx, f.s))
	// The sweep saw the outage (n1, disconnected before it, restarts its
	// clock with the outage grace), ended n2's session with gw1's lapsed
	// lease, and moved neither to unreachable.
	require.Equal(t, "gateway-lost", *f.session("n2").CloseReason)
	for _, id := range []string{"n1", "n2"} {
		f.requireState(id, core.NodeDisconnected)
		require.Equal(t, "outage", f.session(id).GraceReason)
	}
	f.advance(commands.NoSessionAfter + commands.OutageGrace - time.Second)
	f.requireState("n1", core.NodeDisconnected)
	f.requireState("n2", core.NodeDisconnected)
	f.advance(time.Second)
	f.requireState("n1", core.NodeUnreachable)
	f.requireState("n2", core.NodeUnreachable)
	require.Equal(t, "Outage", f.conditions("n2")[0].Reason)
	f.requireInvariants()
}

// A daemon that comes back supersedes its session and rejoins placement.
func TestReconnectClearsUnreachable(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.join("n1", "metal")
	f.gateway("gw1")
	s := f.open("n1", "gw1", "j1")
	require.NoError(t, f.s.NodeSessions().CloseNodeSession(f.ctx, "n1", s.Epoch, 0))
	f.advance(commands.NoSessionAfter)
	f.requireState("n1", core.NodeUnreachable)

	s2 := f.open("n1", "gw1", "j1")
	require.Equal(t, int64(2), s2.Epoch)
	require.False(t, s2.JournalChanged)
	f.requireState("n1", core.NodeConnected)
	require.Empty(t, f.node("n1").NoScheduleReasons)
	require.Empty(t, f.conditions("n1"))
	require.Equal(t, 1, f.events(core.EventNodeConnected, "n1")-1, "connected twice, one event each")
	f.requireInvariants()
}
