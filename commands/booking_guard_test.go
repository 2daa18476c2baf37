package commands_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// TestBookingsHoldWithoutTheExclusionConstraint drops the exclusion
// constraint, the worst case of a GiST index that lost entries (see
// migration 0027), and books, extends and changes modes as usual: the device
// locks and DeviceBookingInsert's btree check alone must keep every device
// booked once per instant.
func TestBookingsHoldWithoutTheExclusionConstraint(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", exclusive, exclusive, exclusive, exclusive)
	_, err := f.d.Pool.Exec(f.ctx, `ALTER TABLE device_bookings DROP CONSTRAINT device_bookings_no_overlap`)
	require.NoError(t, err)

	// A rush: 16 placers for 4 GPUs in one window; 2 at most can book 2 each.
	var wg sync.WaitGroup
	res := make([]commands.ReservationResult, 16)
	errs := make([]error, len(res))
	start, end := window(0, 2)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			actor := tenantA
			if i%2 == 1 {
				actor = tenantB
			}
			res[i], errs[i] = f.h.CreateReservation(f.ctx, actor, commands.CreateReservation{PoolID: "fra1-gpu",
				GPUs: 2, Start: start, End: end})
		}()
	}
	wg.Wait()
	booked := 0
	for i, err := range errs {
		require.NoError(t, err)
		if res[i].Reservation.State == core.ReservationBooked {
			booked++
		}
	}
	require.Equal(t, 2, booked, "4 GPUs hold two 2-GPU reservations")
	f.requireInvariants(t)

	// An extension into a later booking of the same GPU is refused.
	s, e := window(3, 4)
	later := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 4, Start: s, End: e})
	require.Equal(t, core.ReservationBooked, later.Reservation.State)
	for i, r := range res {
		if r.Reservation.State == core.ReservationBooked {
			actor := tenantA
			if i%2 == 1 {
				actor = tenantB
			}
			_, err := f.h.ExtendReservation(f.ctx, actor, commands.ExtendReservation{
				ReservationID: r.Reservation.ID, NewEnd: e})
			require.Equal(t, core.CodeConflict, core.CodeOf(err), "%v", err)
		}
	}
	// A mode change of a booked GPU is refused (the probe sees the booking).
	_, err = f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: gpus[0],
		Layout: core.GPULayout{Mode: core.GPUMIG, MIG: []string{"3g.40gb", "3g.40gb"}}})
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "%v", err)
	f.requireInvariants(t)
}
