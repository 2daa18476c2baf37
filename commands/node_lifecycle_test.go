package commands_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// Drain keeps new bookings off a node; undrain lets them back.
func TestDrainNode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	_, err := f.h.DrainNode(f.ctx, tenantA, commands.DrainNode{NodeID: "n1"})
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err))

	res, err := f.h.DrainNode(f.ctx, operator, commands.DrainNode{NodeID: "n1"})
	require.NoError(t, err)
	require.Equal(t, []string{core.NoScheduleDraining}, res.NoScheduleReasons)
	again, err := f.h.DrainNode(f.ctx, operator, commands.DrainNode{NodeID: "n1"})
	require.NoError(t, err)
	require.Equal(t, res.Version, again.Version, "draining twice is a no-op")

	pending := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	require.Equal(t, core.ReservationPending, pending.Reservation.State)

	_, err = f.h.UndrainNode(f.ctx, operator, commands.DrainNode{NodeID: "n1"})
	require.NoError(t, err)
	booked := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	require.Equal(t, core.ReservationBooked, booked.Reservation.State)
	require.Equal(t, 1, f.countEvents(t, core.EventNodeDraining))
	require.Equal(t, 1, f.countEvents(t, core.EventNodeUndrained))
	f.requireInvariants(t)
}

// Release gives back every reservation on the node; retire is refused
// until then, and revokes the node's credentials.
func TestReleaseAndRetireNode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	cred, err := f.h.JoinNode(f.ctx, operator, "n1")
	require.NoError(t, err)
	r1 := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	r2 := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1})

	_, err = f.h.RetireNode(f.ctx, operator, commands.RetireNode{NodeID: "n1"})
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "a node holding reservations is not retired")

	rel, err := f.h.ReleaseNode(f.ctx, operator, commands.ReleaseNode{NodeID: "n1"})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{r1.Reservation.ID, r2.Reservation.ID}, rel.Released)
	for _, id := range rel.Released {
		r, err := f.h.GetReservation(f.ctx, operator, id)
		require.NoError(t, err)
		require.Equal(t, core.ReservationReleased, r.State)
	}

	ret, err := f.h.RetireNode(f.ctx, operator, commands.RetireNode{NodeID: "n1"})
	require.NoError(t, err)
	require.Equal(t, string(core.NodeRetired), ret.State)
	_, _, err = f.h.NodeSessions().AuthenticateNodeCredential(f.ctx, cred.Token)
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err), "a retired node's credential is revoked")
	_, err = f.h.RetireNode(f.ctx, operator, commands.RetireNode{NodeID: "n1"})
	require.Equal(t, core.CodeConflict, core.CodeOf(err))
	pending := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	require.Equal(t, core.ReservationPending, pending.Reservation.State)
	f.requireInvariants(t)
}

// nodes.release reads the node's reservations, then releases each in its
// own transaction: one that ended in between (its tenant released it, it
// expired or was preempted) is skipped, not a CONFLICT that stops the
// command halfway and leaves the reservations after it live.
func TestReleaseNodeSkipsReservationsEndedSinceListed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	r1 := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	r2 := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1})
	listed := []string{r1.Reservation.ID, r2.Reservation.ID} // as nodes.release read them
	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: r1.Reservation.ID})
	require.NoError(t, err, "the tenant releases its own first")

	released, err := f.h.ReleaseListed(f.ctx, operator, listed)
	require.NoError(t, err)
	require.Equal(t, []string{r2.Reservation.ID}, released)
	r, err := f.h.GetReservation(f.ctx, operator, r2.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationReleased, r.State, "the reservation after the ended one is released too")
	f.requireInvariants(t)
}
