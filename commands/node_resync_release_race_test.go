package commands_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// A release that commits while the node's resync runs, after the resync
// read the node's live allocations and before it read their jobs, leaves
// the released allocation's jobs at assign, unassign: the resync sees an
// unassign last and would push the allocation again. An allocation that was
// released is never assigned again. The assign queued after its own
// unassign held both for ever (dispatch holds an allocation's jobs while an
// unassign of its GPU queued before is open, its own included), and every
// later assign of that GPU behind them: on a real server, the preemptor of
// a victim its tenant released meanwhile stayed active without its GPU,
// and the instances of the next victims on that GPU stayed stopping.
func TestResyncDoesNotReassignAReleasedAllocation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	d := f.connect(t, "n1", "j1", 0)
	rsv := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	alloc := f.allocationOf(t, rsv.ID)

	pause := pgtest.NewPauseAfter("NodeLiveAssignments") // the slow resync has read the allocation as live
	pool, err := pg.Connect(f.ctx, f.d.URL, pg.PoolOptions{MaxConns: 2, IdleInTxTimeout: time.Minute, Tracer: pause})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	slow := commands.New(pool, commands.Config{})
	var res commands.AssignmentReconcile
	done := make(chan error, 1)
	go func() {
		var err error
		res, _, err = slow.ResyncNode(f.ctx, "n1")
		done <- err
	}()
	<-pause.Reached()
	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: rsv.ID})
	require.NoError(t, err)
	pause.Proceed()
	require.NoError(t, <-done)

	require.Empty(t, res.Repushed, "a released allocation is not pushed again")
	jobs := f.assignmentJobs(t, "n1")
	require.Len(t, jobs, 2)
	require.Equal(t, []string{core.NodeCommandAssign, core.NodeCommandUnassign}, []string{jobs[0].Kind, jobs[1].Kind})
	require.Equal(t, alloc, *jobs[1].AllocationID)
	rep := d.dispatch()
	require.Len(t, rep.Sent, 2, "the assign and its unassign go; nothing waits for itself")
	f.requireInvariants(t)
}
