package commands_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
)

// A reservation whose end has passed has ended, even before the expiry
// reconciler has run: the node's daemon stopped its workloads at the end
// by its own clock. An extend in that gap used to succeed, book the
// devices again from the old end and answer 200 with the reservation
// active, while nothing ran on it any more. It is CONFLICT, and nothing
// changes: no version, no booking, no event; the expiry then ends it as
// if nobody had asked.
func TestExtendAfterTheWindowEndedIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		active bool
	}{{name: "active", active: true}, {name: "pending"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.node(t, "n1", exclusive)
			var r core.Reservation
			if tc.active {
				r = f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation // [0h, 2h)
				f.activate(t, r)
			} else {
				f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1}) // takes the one GPU
				r = f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
				require.Equal(t, core.ReservationPending, r.State)
			}
			before, err := f.h.GetReservation(f.ctx, tenantA, r.ID)
			require.NoError(t, err)
			extendedBefore := f.countEvents(t, core.EventReservationExtended)

			f.d.AdvanceSimClock(t, 2*time.Hour+time.Minute) // past the end; the expiry has not run yet
			_, err = f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: r.ID,
				NewEnd: r.End.Add(time.Hour), IdempotencyKey: "late"})
			require.Equal(t, core.CodeConflict, core.CodeOf(err), "%v", err)
			require.ErrorContains(t, err, "ended at")

			after, err := f.h.GetReservation(f.ctx, tenantA, r.ID)
			require.NoError(t, err)
			require.Equal(t, before.Version, after.Version, "nothing written")
			require.True(t, after.End.Equal(r.End))
			require.Equal(t, extendedBefore, f.countEvents(t, core.EventReservationExtended))
			var booked int
			require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT count(*) FROM device_bookings b JOIN allocations a
				ON a.id = b.allocation_id WHERE a.reservation_id = $1 AND upper(b.during) > $2`, r.ID, r.End).Scan(&booked))
			require.Zero(t, booked, "no segment booked after the end")

			require.NoError(t, commandstest.Expire(f.ctx, f.h, r.ID))
			got, err := f.h.GetReservation(f.ctx, tenantA, r.ID)
			require.NoError(t, err)
			require.Equal(t, core.ReservationExpired, got.State)
			f.requireInvariants(t)
		})
	}
}

// The node's daemon stops a running reservation's workloads at its end by
// its own clock, and an extension reaches it as a new assignment. One that
// committed milliseconds before the end was acknowledged and billed and
// arrived after everything had stopped. Less than ExtendLead before the end
// it is CONFLICT and writes nothing; at ExtendLead it is taken; a pending
// reservation (nothing runs) is not held to it.
func TestExtendTooCloseToTheEndOfARunningWindowIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	r := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation // [0h, 2h)
	f.activate(t, r)
	before, err := f.h.GetReservation(f.ctx, tenantA, r.ID)
	require.NoError(t, err)
	extendedBefore := f.countEvents(t, core.EventReservationExtended)

	f.d.AdvanceSimClock(t, 2*time.Hour-commands.ExtendLead+time.Millisecond)
	_, err = f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: r.ID,
		NewEnd: r.End.Add(time.Hour), IdempotencyKey: "late"})
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "must come at least 10s before")
	after, err := f.h.GetReservation(f.ctx, tenantA, r.ID)
	require.NoError(t, err)
	require.Equal(t, before.Version, after.Version, "nothing written")
	require.Equal(t, extendedBefore, f.countEvents(t, core.EventReservationExtended))

	g := setup(t)
	g.node(t, "n1", exclusive)
	r2 := g.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	g.activate(t, r2)
	g.d.AdvanceSimClock(t, 2*time.Hour-commands.ExtendLead)
	res, err := g.h.ExtendReservation(g.ctx, tenantA, commands.ExtendReservation{ReservationID: r2.ID,
		NewEnd: r2.End.Add(time.Hour), IdempotencyKey: "in-time"})
	require.NoError(t, err)
	require.True(t, res.Reservation.End.Equal(r2.End.Add(time.Hour)))

	// Pending: nothing runs, so the lead does not apply.
	p := setup(t)
	p.node(t, "n1", exclusive)
	p.reserve(t, tenantB, commands.CreateReservation{GPUs: 1})
	pr := p.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	require.Equal(t, core.ReservationPending, pr.State)
	p.d.AdvanceSimClock(t, 2*time.Hour-time.Second)
	_, err = p.h.ExtendReservation(p.ctx, tenantA, commands.ExtendReservation{ReservationID: pr.ID,
		NewEnd: pr.End.Add(time.Hour), IdempotencyKey: "pending"})
	require.NoError(t, err)
	f.requireInvariants(t)
	g.requireInvariants(t)
	p.requireInvariants(t)
}
