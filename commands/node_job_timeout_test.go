package commands_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
)

// sweepFor runs the liveness sweep every LivenessSweepEvery for d on the
// simulated clock, as a live control plane does.
func (f *fixture) sweepFor(t *testing.T, d time.Duration) {
	t.Helper()
	for ; d > 0; d -= commands.LivenessSweepEvery {
		f.d.AdvanceSimClock(t, min(d, commands.LivenessSweepEvery))
		require.NoError(t, commandstest.SweepLiveness(f.ctx, f.h))
	}
}

// jobState is a node job's state and version as the database holds them.
func (f *fixture) jobState(t *testing.T, id string) (core.State, int64, string) {
	t.Helper()
	var state, reason string
	var version int64
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT state, version, reason FROM node_commands WHERE id = $1", id).
		Scan(&state, &version, &reason))
	return core.State(state), version, reason
}

// A tenant's jobs on a node that went away and stays away end timed-out
// once it has been unreachable for NodeJobTimeout, not before: an exec the
// daemon was running, and an instance-start, whose instance fails with the
// reason; each writes node_command.timed_out. The assign stays open: its
// release path and the fencing need it to conclude on the node. A late
// report, when the daemon comes back, is acknowledged and changes nothing.
func TestNodeJobTimesOutOnUnreachableNode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	rsv := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	f.activate(t, rsv)
	exec, err := f.h.RunNodeCommand(f.ctx, tenantA, execOn("n1", "k1"))
	require.NoError(t, err)
	inst, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID})
	require.NoError(t, err)
	var startID, assignID string
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT id FROM node_commands WHERE instance_id = $1", inst.Instance.ID).
		Scan(&startID))
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT id FROM node_commands WHERE kind = 'assign'").Scan(&assignID))

	d := f.connect(t, "n1", "j1", 0)
	d.dispatch()
	d.report(exec.Command.ID, string(core.CommandRunning), "", 0)
	require.NoError(t, commandstest.SweepLiveness(f.ctx, f.h)) // the controller heartbeat
	require.NoError(t, f.h.NodeSessions().CloseNodeSession(f.ctx, "n1", d.epoch, 0))
	f.sweepFor(t, commands.NoSessionAfter+2*commands.LivenessSweepEvery)
	var nodeState string
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT state FROM nodes WHERE id = 'n1'").Scan(&nodeState))
	require.Equal(t, string(core.NodeUnreachable), nodeState)

	// Unreachable, but not yet for NodeJobTimeout: nothing ends. The control
	// plane sweeps meanwhile (one jump of the clock would be an outage).
	f.upFor(t, commands.NodeJobTimeout-time.Minute)
	state, _, _ := f.jobState(t, exec.Command.ID)
	require.Equal(t, core.CommandRunning, state)
	require.Zero(t, f.countEvents(t, core.EventNodeCommandTimedOut))

	f.sweepFor(t, 2*time.Minute)
	state, version, reason := f.jobState(t, exec.Command.ID)
	require.Equal(t, core.CommandTimedOut, state)
	require.Contains(t, reason, "unreachable since")
	got, err := f.h.GetNodeCommand(f.ctx, tenantA, exec.Command.ID)
	require.NoError(t, err)
	require.Equal(t, core.CommandTimedOut, got.State)
	require.NotNil(t, got.FinishedAt)
	state, _, _ = f.jobState(t, startID)
	require.Equal(t, core.CommandTimedOut, state)
	failed := get(t, f, inst.Instance.ID)
	require.Equal(t, core.ProvisionFailed, failed.State, "its instance ends, so retention can prune both")
	require.Contains(t, failed.Reason, "timed out")
	require.Equal(t, 2, f.countEvents(t, core.EventNodeCommandTimedOut))
	state, _, _ = f.jobState(t, assignID)
	require.NotEqual(t, core.CommandTimedOut, state, "an assignment job is never timed out")
	_, err = f.d.Pool.Exec(f.ctx, "UPDATE node_commands SET state = 'timed-out' WHERE id = $1", assignID)
	require.ErrorContains(t, err, "node_commands_assignments_never_time_out", "nor by any other writer")
	f.sweepFor(t, time.Minute)
	require.Equal(t, 2, f.countEvents(t, core.EventNodeCommandTimedOut), "once")

	// The daemon comes back with its journal and reports the exec's end.
	back := f.connect(t, "n1", "j1", 0)
	require.NotContains(t, jobIDs(back.dispatch().ToSend), exec.Command.ID, "a timed-out job is not sent again")
	back.report(exec.Command.ID, string(core.CommandSucceeded), "", 0)
	state, v, _ := f.jobState(t, exec.Command.ID)
	require.Equal(t, core.CommandTimedOut, state, "a late report changes nothing")
	require.Equal(t, version, v)
	require.Zero(t, f.countEvents(t, core.EventNodeCommandSucceeded))
	f.requireInvariants(t)
}

// A retired node can never answer: its open jobs time out at the next
// sweep, whatever time it was away.
func TestNodeJobTimesOutOnRetiredNode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	job, err := f.h.RunNodeCommand(f.ctx, operator, commands.RunNodeCommand{NodeID: "n1", IdempotencyKey: "w1",
		Kind: core.NodeCommandWipe})
	require.NoError(t, err)
	require.NoError(t, commandstest.SweepLiveness(f.ctx, f.h))
	state, _, _ := f.jobState(t, job.Command.ID)
	require.Equal(t, core.CommandQueued, state, "a registered node's job waits for its daemon")
	_, err = f.h.RetireNode(f.ctx, operator, commands.RetireNode{NodeID: "n1"})
	require.NoError(t, err)
	f.sweepFor(t, commands.LivenessSweepEvery)
	state, _, reason := f.jobState(t, job.Command.ID)
	require.Equal(t, core.CommandTimedOut, state)
	require.Contains(t, reason, "retired")
	require.Equal(t, 1, f.countEvents(t, core.EventNodeCommandTimedOut))
	f.requireInvariants(t)
}

// upFor runs the liveness sweep for d on the simulated clock as seldom as
// a control plane that stays up may: every OutageThreshold, the longest
// gap that is not an outage. It keeps hour-long tests short.
func (f *fixture) upFor(t *testing.T, d time.Duration) {
	t.Helper()
	for ; d > 0; d -= commands.OutageThreshold {
		f.d.AdvanceSimClock(t, min(d, commands.OutageThreshold))
		require.NoError(t, commandstest.SweepLiveness(f.ctx, f.h))
	}
}

// A node's absence counts only while the control plane was up to receive
// it: a node unreachable for 30 minutes before a two-hour outage of the
// control plane keeps its jobs at the first sweep after the outage (its
// daemon could not reconnect meanwhile), and they time out once the node
// has stayed away NodeJobTimeout from the recovery. Without the outage's
// end as the clock's start, the first sweep timed the job out.
func TestNodeJobTimeoutIgnoresControlPlaneOutage(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	job, err := f.h.RunNodeCommand(f.ctx, operator, commands.RunNodeCommand{NodeID: "n1", IdempotencyKey: "w1",
		Kind: core.NodeCommandWipe})
	require.NoError(t, err)
	d := f.connect(t, "n1", "j1", 0)
	require.NoError(t, commandstest.SweepLiveness(f.ctx, f.h)) // the controller heartbeat
	require.NoError(t, f.h.NodeSessions().CloseNodeSession(f.ctx, "n1", d.epoch, 0))
	f.sweepFor(t, commands.NoSessionAfter+2*commands.LivenessSweepEvery)
	var nodeState string
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT state FROM nodes WHERE id = 'n1'").Scan(&nodeState))
	require.Equal(t, string(core.NodeUnreachable), nodeState)
	f.upFor(t, 30*time.Minute)

	// The control plane is down for two hours: nobody sweeps.
	f.d.AdvanceSimClock(t, 2*time.Hour)
	require.NoError(t, commandstest.SweepLiveness(f.ctx, f.h))
	state, _, _ := f.jobState(t, job.Command.ID)
	require.Equal(t, core.CommandQueued, state, "the outage does not count as the node's absence")
	require.Zero(t, f.countEvents(t, core.EventNodeCommandTimedOut))

	f.upFor(t, commands.NodeJobTimeout-time.Minute)
	state, _, _ = f.jobState(t, job.Command.ID)
	require.Equal(t, core.CommandQueued, state, "not yet away NodeJobTimeout since the recovery")

	f.upFor(t, 2*time.Minute)
	state, _, reason := f.jobState(t, job.Command.ID)
	require.Equal(t, core.CommandTimedOut, state)
	require.Contains(t, reason, "unreachable since")
	require.Contains(t, reason, "control plane")
	require.Equal(t, 1, f.countEvents(t, core.EventNodeCommandTimedOut))
	f.requireInvariants(t)
}

func jobIDs(jobs []commands.NodeJobToSend) []string {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}
