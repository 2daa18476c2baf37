package commands_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// A suspended tenant can create and extend nothing (the database refuses
// it, whoever asks); its reservations run on unless the operator releases
// them; a repeat changes nothing; resume restores it. Other tenants are
// untouched.
func TestSuspendTenant(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive, exclusive, exclusive)
	booked := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: 1, MemoryMB: 1024, DiskGB: 10})
	require.Equal(t, core.ReservationBooked, booked.Reservation.State)

	_, err := f.h.SuspendTenant(f.ctx, tenantA, commands.SuspendTenant{Tenant: "acme", Reason: "x"})
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err), "a member cannot suspend: %v", err)
	_, err = f.h.SuspendTenant(f.ctx, operator, commands.SuspendTenant{Tenant: "nobody", Reason: "x"})
	require.Equal(t, core.CodeNotFound, core.CodeOf(err), "%v", err)
	_, err = f.h.SuspendTenant(f.ctx, operator, commands.SuspendTenant{Tenant: "acme", Reason: "  "})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "a reason is required: %v", err)

	res, err := f.h.SuspendTenant(f.ctx, operator, commands.SuspendTenant{Tenant: "acme", Reason: "invoice 2026-11 unpaid"})
	require.NoError(t, err)
	require.True(t, res.Suspended)
	require.Equal(t, "invoice 2026-11 unpaid", res.Reason)
	require.False(t, res.Position.IsZero())
	require.Empty(t, res.Released)

	again, err := f.h.SuspendTenant(f.ctx, operator, commands.SuspendTenant{Tenant: "acme", Reason: "another reason"})
	require.NoError(t, err)
	require.True(t, again.Position.IsZero(), "a repeat writes nothing")
	require.Equal(t, res.Version, again.Version)
	require.Equal(t, "invoice 2026-11 unpaid", again.Reason, "the first reason stays")
	require.Equal(t, 1, f.countEvents(t, core.EventTenantSuspended))

	// The guard, reached through the commands (the API refuses earlier).
	start, end := window(3, 4)
	_, err = f.h.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, VCPU: 1,
		MemoryMB: 1024, DiskGB: 10, Start: start, End: end})
	require.Equal(t, core.CodeTenantSuspended, core.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "invoice 2026-11 unpaid")
	_, err = f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: booked.Reservation.ID,
		NewEnd: booked.Reservation.End.Add(time.Hour)})
	require.Equal(t, core.CodeTenantSuspended, core.CodeOf(err), "%v", err)
	f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, VCPU: 1, MemoryMB: 1024, DiskGB: 10}) // globex goes on
	var n int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM reservations WHERE tenant_id = 'acme'").Scan(&n))
	require.Equal(t, 1, n, "nothing was created for acme")

	// Kept running until the operator asks: a repeat with release ends it.
	released, err := f.h.SuspendTenant(f.ctx, operator, commands.SuspendTenant{Tenant: "acme", Reason: "x", ReleaseReservations: true})
	require.NoError(t, err)
	require.Equal(t, []string{booked.Reservation.ID}, released.Released)
	require.Equal(t, 1, f.countEvents(t, core.EventReservationReleased))
	require.Equal(t, 1, f.countEvents(t, core.EventTenantSuspended))

	_, err = f.h.ResumeTenant(f.ctx, tenantB, commands.ResumeTenant{Tenant: "acme"})
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err))
	resumed, err := f.h.ResumeTenant(f.ctx, operator, commands.ResumeTenant{Tenant: "acme"})
	require.NoError(t, err)
	require.False(t, resumed.Suspended)
	require.False(t, resumed.Position.IsZero())
	require.Equal(t, res.Version+1, resumed.Version)
	noop, err := f.h.ResumeTenant(f.ctx, operator, commands.ResumeTenant{Tenant: "acme"})
	require.NoError(t, err)
	require.True(t, noop.Position.IsZero(), "resuming a tenant that is not suspended writes nothing")
	require.Equal(t, 1, f.countEvents(t, core.EventTenantResumed))
	f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: 1, MemoryMB: 1024, DiskGB: 10, Start: start, End: end})
	f.requireInvariants(t)
}

// A create that passed its permission check while a suspend was in
// progress is refused by the database once the suspend commits: the guard
// waits for the suspend's lock on the tenant row and then reads the row as
// the suspend left it. The suspend is held after its first statements by a
// lock the test takes on authz_changes, so that the create arrives while
// the suspend has locked the tenant and not committed.
func TestSuspendTenantRefusesACreateRacingIt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)

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

	created := make(chan error, 1)
	go func() {
		_, err := f.h.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, VCPU: 1,
			MemoryMB: 1024, DiskGB: 10, Start: pgtest0(), End: pgtest0().Add(time.Hour)})
		created <- err
	}()
	f.waitForLockWaits(t, 2) // the create waits on acme's row

	require.NoError(t, hold.Rollback(f.ctx))
	require.NoError(t, <-suspended)
	err = <-created
	require.Equal(t, core.CodeTenantSuspended, core.CodeOf(err), "the create racing the suspend is refused: %v", err)

	var n int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM reservations WHERE tenant_id = 'acme'").Scan(&n))
	require.Zero(t, n)
	f.requireInvariants(t) // the quota charge rolled back with it
}

// waitForLockWaits waits until n sessions of the test database wait for a
// lock.
func (f *fixture) waitForLockWaits(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		var waiting int
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting))
		return waiting >= n
	}, 10*time.Second, 5*time.Millisecond)
}

// pgtest0 is the simulated clock's start: a window from it is current.
func pgtest0() time.Time { s, _ := window(0, 1); return s }
