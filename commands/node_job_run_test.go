package commands_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

func execOn(node, key string) commands.RunNodeCommand {
	return commands.RunNodeCommand{NodeID: node, IdempotencyKey: key, Kind: core.NodeCommandExec,
		Payload: core.NodeCommandPayload{Script: "nvidia-smi -L"}}
}

// A tenant commands only a node it holds a reservation on; elsewhere the
// node does not exist for it (404), and fleet operations are the
// operator's (403).
func TestRunNodeCommandAuthorization(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	f.node(t, "n2", exclusive)
	res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	require.Equal(t, core.ReservationBooked, res.Reservation.State)
	held, other := res.Reservation.NodeID, "n1"
	if held == "n1" {
		other = "n2"
	}

	_, err := f.h.RunNodeCommand(f.ctx, tenantA, execOn(other, "k1"))
	require.Equal(t, core.CodeNotFound, core.CodeOf(err), "no reservation on that node: 404")
	_, err = f.h.RunNodeCommand(f.ctx, tenantB, execOn(held, "k1"))
	require.Equal(t, core.CodeNotFound, core.CodeOf(err), "another tenant's node: 404")
	_, err = f.h.RunNodeCommand(f.ctx, tenantA, commands.RunNodeCommand{NodeID: held, IdempotencyKey: "k2",
		Kind: core.NodeCommandWipe})
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err), "wipe is the operator's")
	_, err = f.h.RunNodeCommand(f.ctx, tenantA, commands.RunNodeCommand{NodeID: held, Kind: core.NodeCommandExec,
		Payload: core.NodeCommandPayload{Script: "true"}})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "an idempotency key is required")
	_, err = f.h.RunNodeCommand(f.ctx, tenantA, commands.RunNodeCommand{NodeID: held, Kind: core.NodeCommandExec,
		IdempotencyKey: "k2", Payload: core.NodeCommandPayload{Script: strings.Repeat("x", core.MaxScript+1)}})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "a script sh -c could not take")
	_, err = f.h.RunNodeCommand(f.ctx, operator, commands.RunNodeCommand{NodeID: held, IdempotencyKey: "k3",
		Kind: core.NodeCommandDeploy, RetrySafe: true})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "a deploy is never retry-safe")

	_, err = f.h.RunNodeCommand(f.ctx, tenantA, execOn(held, "k4"))
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "a booking whose window has not begun runs nothing")
	require.NoError(t, commandstest.Activate(f.ctx, f.h, res.Reservation.ID))
	ok, err := f.h.RunNodeCommand(f.ctx, tenantA, execOn(held, "k5")) // k4's refusal is replayed for k4
	require.NoError(t, err)
	require.NotEmpty(t, ok.Command.AllocationID, "the job runs in the tenant's allocation")
	require.Equal(t, core.CommandQueued, ok.Command.State)
	require.Equal(t, "acme", ok.Command.Tenant)
	require.False(t, ok.Position.IsZero())
	_, err = f.h.GetNodeCommand(f.ctx, tenantB, ok.Command.ID)
	require.Equal(t, core.CodeNotFound, core.CodeOf(err), "another tenant's command: 404")
	got, err := f.h.GetNodeCommand(f.ctx, operator, ok.Command.ID)
	require.NoError(t, err)
	require.Equal(t, ok.Command.ID, got.ID)

	// The operator may command any node.
	_, err = f.h.RunNodeCommand(f.ctx, operator, commands.RunNodeCommand{NodeID: other, IdempotencyKey: "wf:w1:s1",
		Kind: core.NodeCommandWipe})
	require.NoError(t, err)
	f.requireInvariants(t)
}

// The same key twice is one command: replayed for the same identity, and
// found by UNIQUE (node_id, idempotency_key) for another identity of the
// tenant (a workflow step retried by another worker). A different command
// under the key is refused.
func TestRunNodeCommandIdempotency(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	require.NoError(t, commandstest.Activate(f.ctx, f.h, res.Reservation.ID))
	node := res.Reservation.NodeID
	key := "wf:wf_1:step-2"

	first, err := f.h.RunNodeCommand(f.ctx, tenantA, execOn(node, key))
	require.NoError(t, err)
	again, err := f.h.RunNodeCommand(f.ctx, tenantA, execOn(node, key))
	require.NoError(t, err)
	require.Equal(t, first.Command.ID, again.Command.ID)
	colleague := core.Actor{Tenant: "acme", Identity: "workflow@acme", Role: core.RoleMember}
	other, err := f.h.RunNodeCommand(f.ctx, colleague, execOn(node, key))
	require.NoError(t, err)
	require.Equal(t, first.Command.ID, other.Command.ID, "one command per (node, key)")
	different := execOn(node, key)
	different.Payload.Script = "reboot"
	_, err = f.h.RunNodeCommand(f.ctx, colleague, different)
	require.Equal(t, core.CodeIdempotencyKeyReused, core.CodeOf(err))

	// Another tenant on the same node has a key space of its own: it can
	// neither squat acme's next key nor learn that acme used one.
	resB := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1})
	require.Equal(t, node, resB.Reservation.NodeID)
	require.NoError(t, commandstest.Activate(f.ctx, f.h, resB.Reservation.ID))
	theirs, err := f.h.RunNodeCommand(f.ctx, tenantB, different)
	require.NoError(t, err, "the same key under another tenant is another command")
	require.NotEqual(t, first.Command.ID, theirs.Command.ID)

	var n int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM node_commands WHERE tenant_id = 'acme' AND kind = 'exec'").Scan(&n))
	require.Equal(t, 1, n)
	require.Equal(t, 2, f.countEvents(t, core.EventNodeCommandQueued))
	_, err = f.d.Q.WorkQueueGet(f.ctx, db.WorkQueueGetParams{Kind: commands.KindNodeJobDispatch, Key: node})
	require.NoError(t, err, "dispatch is woken for the node")
}

// A daemon's report is stored whatever bytes it carries: a NUL, invalid
// UTF-8 and an output cut inside a character (a workload prints what it
// likes) are stored as U+FFFD instead of failing the report, which left
// the job running for good; the output keeps its last 64 KiB and the
// reason its first KiB, each cut at a character boundary.
func TestNodeJobResultStoresAnyBytes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	require.NoError(t, commandstest.Activate(f.ctx, f.h, res.Reservation.ID))
	job, err := f.h.RunNodeCommand(f.ctx, tenantA, execOn(res.Reservation.NodeID, "k1"))
	require.NoError(t, err)
	code := int32(3)
	output := "a\x00b\xff" + strings.Repeat("✓", 30000) + "\x00end"
	require.NoError(t, f.h.NodeSessions().RecordNodeJobResult(f.ctx, commands.RecordNodeJobResult{NodeID: res.Reservation.NodeID,
		Epoch: f.connect(t, res.Reservation.NodeID, "j1", 0).epoch, JobID: job.Command.ID, State: string(core.CommandFailed), ExitCode: &code, Output: output[1:],
		Reason: "why\x00" + strings.Repeat("é", 2000)}))
	got, err := f.h.GetNodeCommand(f.ctx, tenantA, job.Command.ID)
	require.NoError(t, err)
	require.Equal(t, core.CommandFailed, got.State)
	require.True(t, utf8.ValidString(got.Output) && utf8.ValidString(got.Reason))
	require.LessOrEqual(t, len(got.Output), 64<<10)
	require.True(t, strings.HasSuffix(got.Output, "✓\uFFFDend"), "its end, the NUL replaced")
	require.LessOrEqual(t, len(got.Reason), 1<<10)
	require.True(t, strings.HasPrefix(got.Reason, "why\uFFFDéé"), got.Reason[:20])
	f.requireInvariants(t)
}
