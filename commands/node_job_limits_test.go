package commands_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// A job that could never run is refused: minGeneration above the node's
// generation would park it forever (400, nothing written). And a tenant
// may have at most MaxOpenNodeJobs jobs open on a node: one more is 409
// and writes nothing, a retry of a job it has is still answered, another
// tenant on the node is not affected, and a finished job makes room.
func TestRunNodeCommandLimits(t *testing.T) {
	t.Parallel()
	f := setup(t)
	*f.h = *commands.New(f.d.Pool, commands.Config{MaxOpenNodeJobs: 3})
	f.node(t, "n1", exclusive, exclusive)
	d := f.connect(t, "n1", "j1", 0)
	a := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	b := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1}).Reservation
	f.activate(t, a)
	f.activate(t, b)
	require.Equal(t, int64(2), f.generation(t, "n1"), "two assigns")
	jobs := func(tenant string) (n int) {
		t.Helper()
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM node_commands WHERE kind = 'exec' AND tenant_id = $1",
			tenant).Scan(&n))
		return n
	}

	ahead := execOn("n1", "gen-3")
	ahead.MinGeneration = 3
	_, err := f.h.RunNodeCommand(f.ctx, tenantA, ahead)
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "err: %v", err)
	require.ErrorContains(t, err, "minGeneration 3 is above node n1's generation 2")
	require.Zero(t, jobs("acme"))
	current := execOn("n1", "gen-2")
	current.MinGeneration = 2
	_, err = f.h.RunNodeCommand(f.ctx, tenantA, current)
	require.NoError(t, err, "the node's generation now: it runs once the node has applied it")

	var first commands.NodeCommandResult
	for k := range 2 {
		res, err := f.h.RunNodeCommand(f.ctx, tenantA, execOn("n1", fmt.Sprintf("k%d", k)))
		require.NoError(t, err)
		if k == 0 {
			first = res
		}
	}
	events := f.countEvents(t, core.EventNodeCommandQueued)
	_, err = f.h.RunNodeCommand(f.ctx, tenantA, execOn("n1", "one-more"))
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "err: %v", err)
	require.ErrorContains(t, err, "you have 3 node jobs open on node n1, the most allowed")
	require.Equal(t, 3, jobs("acme"), "nothing written")
	require.Equal(t, events, f.countEvents(t, core.EventNodeCommandQueued))
	other := core.Actor{Tenant: "acme", Identity: "carol@acme", Role: core.RoleMember}
	again, err := f.h.RunNodeCommand(f.ctx, other, execOn("n1", "k0"))
	require.NoError(t, err, "a retry of a job it has, under another identity, is answered at the cap")
	require.Equal(t, first.Command.ID, again.Command.ID)
	_, err = f.h.RunNodeCommand(f.ctx, tenantB, execOn("n1", "b1"))
	require.NoError(t, err, "another tenant's jobs do not count")

	d.dispatch()
	d.report(first.Command.ID, "succeeded", "", 0)
	_, err = f.h.RunNodeCommand(f.ctx, tenantA, execOn("n1", "after"))
	require.NoError(t, err, "a finished job makes room")
}
