package queries_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/queries"
)

// runLine runs the waiting line of fra1-gpu once its retry interval has
// passed, as a worker would, and expects its reservations still to wait.
func (f *fixture) runLine(t *testing.T) {
	t.Helper()
	f.d.AdvanceSimClock(t, commands.DefaultPendingRetryInterval)
	again, err := commandstest.RunQueue(f.ctx, f.h, commands.PendingQueueKey("fra1-gpu", ""))
	require.NoError(t, err)
	require.Equal(t, commands.DefaultPendingRetryInterval, again, "it still waits")
}

func (f *fixture) readReservation(t *testing.T, id string) queries.ReservationDetail {
	t.Helper()
	f.catchUp(t, f.lastPosition(t))
	d, err := f.q.GetReservation(f.ctx, tenantA, id, outbox.Position{})
	require.NoError(t, err)
	return d
}

func (f *fixture) pendingEvents(t *testing.T, id string) int {
	t.Helper()
	var n int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM outbox WHERE type = $1 AND subject = $2",
		core.EventReservationPending, core.ReservationSubject(id)).Scan(&n))
	return n
}

// A pending reservation's reason, as the read model shows it, follows the
// retries of its line: when a retry finds other reasons (the taint that
// kept it off the node is gone; now the node is full), the reservation
// moves to a new version with a reservation.pending event. A retry that
// finds the same reasons writes nothing, so a long wait does not fill the
// log.
func TestPendingReasonFollowsTheRetries(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 1)
	f.reserve(t, tenantB, 0, 2) // n1's only GPU
	_, err := f.h.TaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: "k=v"})
	require.NoError(t, err)
	res := f.reserve(t, tenantA, 0, 2)
	require.Equal(t, core.ReservationPending, res.Reservation.State)
	id := res.Reservation.ID

	d := f.readReservation(t, id)
	require.Equal(t, int64(1), d.Version)
	require.NotNil(t, d.Queue)
	require.Contains(t, d.Queue.Reason, "n1: has taint k=v")

	f.runLine(t) // the same reasons: nothing written
	require.Equal(t, 1, f.pendingEvents(t, id))
	require.Equal(t, int64(1), f.readReservation(t, id).Version)

	_, err = f.h.UntaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: "k=v"})
	require.NoError(t, err)
	f.runLine(t)
	d = f.readReservation(t, id)
	require.Contains(t, d.Queue.Reason, "n1: 0 free", "the read model follows the retry")
	require.NotContains(t, d.Queue.Reason, "taint")
	require.Len(t, d.Conditions, 1)
	require.Contains(t, d.Conditions[0].Message, "n1: 0 free")
	require.Equal(t, int64(2), d.Version)
	require.Equal(t, 2, f.pendingEvents(t, id), "the reasons changed")
	w, err := f.h.GetReservation(f.ctx, tenantA, id)
	require.NoError(t, err)
	require.Equal(t, int64(2), w.Version, "the write model's version is the read model's")

	f.runLine(t) // the same reasons again
	require.Equal(t, 2, f.pendingEvents(t, id))

	// The version is the one If-Match guards: the reservation as its
	// creation showed it is gone.
	_, err = f.h.CancelReservation(f.ctx, tenantA, commands.CancelReservation{ReservationID: id, IfVersion: 1})
	require.Error(t, err)
	_, err = f.h.CancelReservation(f.ctx, tenantA, commands.CancelReservation{ReservationID: id, IfVersion: 2})
	require.NoError(t, err)
}
