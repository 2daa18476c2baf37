package queries_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/outbox"
)

// Point in time: who held a GPU at T, for T in the past, present and
// future, including holds the write model has long freed.
func TestDeviceHoldersAtPointInTime(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", 1)
	gpu := "GPU-n1-0"
	a := f.reserve(t, tenantA, 0, 2)
	b := f.reserve(t, tenantB, 2, 4)
	f.d.AdvanceSimClock(t, 3*time.Hour) // b is running; a is over
	require.NoError(t, commandstest.Expire(f.ctx, f.h, a.Reservation.ID))
	rel, err := f.h.ReleaseReservation(f.ctx, tenantB, commands.ReleaseReservation{ReservationID: b.Reservation.ID})
	require.NoError(t, err) // b is cut at 3 h
	c := f.reserve(t, tenantA, 3, 5)
	f.catchUp(t, c.Position)

	for _, tc := range []struct {
		at   float64
		want string
	}{{0.5, a.Reservation.ID}, {1.99, a.Reservation.ID}, {2, b.Reservation.ID}, {2.5, b.Reservation.ID},
		{3, c.Reservation.ID}, {4.5, c.Reservation.ID}, {5, ""}, {-1, ""}} {
		hs, err := f.q.DeviceHolders(f.ctx, operator, gpu, at(tc.at), rel.Position)
		require.NoError(t, err)
		if tc.want == "" {
			require.Empty(t, hs, "at %v h", tc.at)
			continue
		}
		require.Len(t, hs, 1, "at %v h", tc.at)
		require.Equal(t, tc.want, hs[0].ReservationID, "at %v h", tc.at)
		_, perr := outbox.ParsePosition(hs[0].Position)
		require.NoError(t, perr)
	}
	hs, err := f.q.DeviceHolders(f.ctx, operator, gpu, at(2.5), outbox.Position{})
	require.NoError(t, err)
	require.True(t, hs[0].From.Equal(at(2)) && hs[0].To.Equal(at(3)), "b held [2 h, 3 h): cut at its release")

	_, err = f.q.DeviceHolders(f.ctx, tenantA, gpu, at(1), outbox.Position{})
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err))
	_, err = f.q.DeviceHolders(f.ctx, operator, "GPU-nope", at(1), outbox.Position{})
	require.Equal(t, core.CodeNotFound, core.CodeOf(err))

	cap_, err := f.q.PoolCapacity(f.ctx, operator, "fra1-gpu", outbox.Position{})
	require.NoError(t, err)
	require.Equal(t, int64(1), cap_.GPUs[0].Total)
	require.Equal(t, int64(1), cap_.GPUs[0].Allocated, "c holds the GPU")
	n, err := f.q.GetNode(f.ctx, operator, "n1", outbox.Position{})
	require.NoError(t, err)
	require.Len(t, n.Devices, 1)
	require.Len(t, n.Devices[0].Bookings, 1, "only c's booking is current or future")
}
