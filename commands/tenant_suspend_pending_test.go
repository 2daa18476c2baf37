package commands_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// pendingBehindBooked fills n1's one GPU with globex's reservation and
// returns it with acme's pending one, waiting for that GPU.
func (f *fixture) pendingBehindBooked(t *testing.T) (booked, pending commands.ReservationResult) {
	t.Helper()
	f.node(t, "n1", exclusive)
	spec := commands.CreateReservation{GPUs: 1, VCPU: 1, MemoryMB: 1024, DiskGB: 10}
	booked = f.reserve(t, tenantB, spec)
	require.Equal(t, core.ReservationBooked, booked.Reservation.State)
	pending = f.reserve(t, tenantA, spec)
	require.Equal(t, core.ReservationPending, pending.Reservation.State)
	return booked, pending
}

// The database refuses to place a suspended tenant's pending reservation,
// whoever tries (here the retry itself, which the line no longer calls
// for it): the transition from pending to booked runs the suspension
// guard. After the resume it is placed.
func TestSuspendTenantRefusesPlacingItsPendingReservation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	booked, pending := f.pendingBehindBooked(t)
	_, err := f.h.SuspendTenant(f.ctx, operator, commands.SuspendTenant{Tenant: "acme", Reason: "abuse report 4411"})
	require.NoError(t, err)
	_, err = f.h.ReleaseReservation(f.ctx, tenantB, commands.ReleaseReservation{ReservationID: booked.Reservation.ID})
	require.NoError(t, err)

	err = f.h.RetryPending(f.ctx, pending.Reservation.ID)
	require.Equal(t, core.CodeTenantSuspended, core.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "abuse report 4411")
	require.Equal(t, core.ReservationPending, f.state(t, pending.Reservation.ID))
	f.requireInvariants(t) // nothing of the placement is left

	// The resume wakes the line the reservation waits in.
	_, err = f.d.Pool.Exec(f.ctx, "DELETE FROM work_queue WHERE kind = $1", commands.KindReservationQueue)
	require.NoError(t, err)
	_, err = f.h.ResumeTenant(f.ctx, operator, commands.ResumeTenant{Tenant: "acme"})
	require.NoError(t, err)
	var woken int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM work_queue WHERE kind = $1 AND key = $2",
		commands.KindReservationQueue, poolLine).Scan(&woken))
	require.Equal(t, 1, woken, "the resume wakes the line of pool fra1-gpu")
	require.NoError(t, f.h.RetryPending(f.ctx, pending.Reservation.ID))
	require.Equal(t, core.ReservationBooked, f.state(t, pending.Reservation.ID))
}

// A placement racing a suspend is decided by the tenant row: the suspend
// holds it FOR UPDATE (and is held, after its first statements, by a lock
// the test takes on authz_changes) when the retry reaches the guard, which
// waits for it and then refuses. The placement's bookings roll back with
// it.
func TestSuspendTenantRefusesAPlacementRacingIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	booked, pending := f.pendingBehindBooked(t)
	_, err := f.h.ReleaseReservation(f.ctx, tenantB, commands.ReleaseReservation{ReservationID: booked.Reservation.ID})
	require.NoError(t, err)

	hold, err := f.d.Pool.Begin(f.ctx)
	require.NoError(t, err)
	defer func() { _ = hold.Rollback(context.Background()) }()
	_, err = hold.Exec(f.ctx, "LOCK TABLE authz_changes IN EXCLUSIVE MODE")
	require.NoError(t, err)
	suspended := make(chan error, 1)
	go func() {
		_, err := f.h.SuspendTenant(f.ctx, operator, commands.SuspendTenant{Tenant: "acme", Reason: "incident 17"})
		suspended <- err
	}()
	f.waitForLockWaits(t, 1) // the suspend holds acme's row, waits on authz_changes

	placed := make(chan error, 1)
	go func() { placed <- f.h.RetryPending(f.ctx, pending.Reservation.ID) }()
	f.waitForLockWaits(t, 2) // the placement waits on acme's row

	require.NoError(t, hold.Rollback(f.ctx))
	require.NoError(t, <-suspended)
	err = <-placed
	require.Equal(t, core.CodeTenantSuspended, core.CodeOf(err), "the placement racing the suspend is refused: %v", err)
	require.Equal(t, core.ReservationPending, f.state(t, pending.Reservation.ID))
	var bookings int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM allocations WHERE reservation_id = $1",
		pending.Reservation.ID).Scan(&bookings))
	require.Zero(t, bookings, "its allocation rolled back with it")
	f.requireInvariants(t)
}
