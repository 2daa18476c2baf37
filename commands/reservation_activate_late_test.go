package commands_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
)

// A booked reservation whose whole window passed before its activation
// ran (the workers were down, or behind) was never usable. Its activation
// used to make it active anyway: reservation.activated went to the
// tenant's webhooks for a window already over, and the node got an assign
// for it, then its unassign, before the expiry ended it, or not, depending
// on which of the two items a worker took first. Now a late activation
// expires it: booked, then expired, whichever runs first (and the expiry
// itself is then a no-op, as is an activation after it).
func TestActivationAfterTheWindowEndedExpiresIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	start, end := window(1, 2)
	r := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end}).Reservation
	require.Equal(t, core.ReservationBooked, r.State)

	f.d.AdvanceSimClock(t, 2*time.Hour+time.Minute) // past the end, neither item has run
	require.NoError(t, commandstest.Activate(f.ctx, f.h, r.ID))
	got, err := f.h.GetReservation(f.ctx, tenantA, r.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationExpired, got.State, "never active: its window is over")
	require.Equal(t, r.Version+1, got.Version)
	require.Zero(t, f.countEvents(t, core.EventReservationActivated))
	require.Equal(t, 1, f.countEvents(t, core.EventReservationExpired))
	require.Empty(t, f.assignmentJobs(t, "n1"), "no assign, nor unassign, for a window that is over")
	q, err := f.d.Q.QuotaUsageGet(f.ctx, dbQuota("acme", "gpu"))
	require.NoError(t, err)
	require.Zero(t, q.Used, "refunded")

	require.NoError(t, commandstest.Expire(f.ctx, f.h, r.ID), "the expiry finds it ended")
	got, err = f.h.GetReservation(f.ctx, tenantA, r.ID)
	require.NoError(t, err)
	require.Equal(t, r.Version+1, got.Version)
	require.Equal(t, 1, f.countEvents(t, core.EventReservationExpired))
	f.requireInvariants(t)
}
