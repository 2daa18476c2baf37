package projections_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
)

// A rebuild replays the log into fresh tables that equal the live ones row
// by row, takes the lease from the live dispatcher meanwhile, sets the
// cursor where it stopped, and the live dispatcher carries on from there on
// the new tables.
func TestRebuildEqualsLive(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rs := f.scenario(t)
	f.catchUp(t)
	live := takeSnapshot(t, f.ctx, f.d.Q)
	log := readLog(t, f)

	for _, p := range projections.All() {
		res, err := projections.Rebuild(f.ctx, f.d.Pool, p.ID())
		require.NoError(t, err, p.ID())
		require.GreaterOrEqual(t, res.Events, len(log), p.ID())
		cur, err := outbox.CursorOf(f.ctx, f.d.Q, p.ID())
		require.NoError(t, err)
		require.Equal(t, res.Position, cur, "the cursor is where the replay stopped")
		owner, epoch := leaseOf(t, f, p.ID())
		require.Equal(t, int64(2), epoch, "the rebuild took the lease over from the live dispatcher")
		require.Contains(t, owner, "rebuild:")
	}
	require.Equal(t, live, takeSnapshot(t, f.ctx, f.d.Q), "rebuilt tables equal the live ones")

	// The live dispatchers take their leases back (the rebuild released
	// them) and keep applying to the swapped-in tables.
	_, err := f.h.ExtendReservation(f.ctx, tenantB, commands.ExtendReservation{ReservationID: rs["late"].Reservation.ID, NewEnd: at(10)})
	require.NoError(t, err)
	f.catchUp(t)
	got, err := f.d.Q.RmReservationGet(f.ctx, rs["late"].Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, int64(2), got.Version)
	owner, epoch := leaseOf(t, f, projections.NameReservations)
	require.Equal(t, "test", owner)
	require.Equal(t, int64(3), epoch)
}

// leaseOf reads a projection's dispatch lease (a released lease expires at
// -infinity, which time.Time cannot hold, hence not LeaseGet).
func leaseOf(t *testing.T, f *fixture, name string) (string, int64) {
	t.Helper()
	var owner string
	var epoch int64
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT owner, epoch FROM leases WHERE name = $1",
		outbox.LeaseName(name)).Scan(&owner, &epoch))
	return owner, epoch
}

// Rebuilds racing live dispatchers and new commands do not corrupt the read
// models: afterwards they equal a rebuild made in quiet.
func TestRebuildRacingLiveDispatchers(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rs := f.scenario(t)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, d := range f.disps {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := d.RunOnce(f.ctx)
				if err != nil && !errors.Is(err, lease.ErrFenced) {
					t.Errorf("dispatch %s: %v", d.SinkID(), err)
					return
				}
			}
		})
	}
	for i, p := range projections.All() {
		_, err := f.h.ExtendReservation(f.ctx, tenantB, commands.ExtendReservation{
			ReservationID: rs["late"].Reservation.ID, NewEnd: at(10 + float64(i))})
		require.NoError(t, err)
		_, err = projections.Rebuild(f.ctx, f.d.Pool, p.ID())
		require.NoError(t, err, p.ID())
	}
	close(stop)
	wg.Wait()
	f.catchUp(t)
	raced := takeSnapshot(t, f.ctx, f.d.Q)

	for _, p := range projections.All() {
		_, err := projections.Rebuild(f.ctx, f.d.Pool, p.ID())
		require.NoError(t, err, p.ID())
	}
	require.Equal(t, raced, takeSnapshot(t, f.ctx, f.d.Q))
	got, err := f.d.Q.RmReservationGet(f.ctx, rs["late"].Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, int64(5), got.Version, "four extensions")

	_, err = projections.Rebuild(f.ctx, f.d.Pool, "no-such-projection")
	require.ErrorContains(t, err, "no projection named")
}
