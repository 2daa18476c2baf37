package commands_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// A tenant may have at most MaxPendingReservations pending reservations:
// of 12 concurrent creates that find no place with a cap of 5, each asking
// for one unit of gpu, vcpu, memory or disk, exactly 5 end pending and 7
// are QUOTA_EXCEEDED, writing nothing (no reservation, no quota charged); another tenant's pending create is not affected; a
// create that books is never refused by the cap; a cancel makes room.
// Quota alone let one tenant queue 100,000 reservations of a megabyte
// each, and every run of their pool's line, which ranks and places every
// tenant's reservations waiting there, took 1.9 s.
func TestPendingReservationsAreCappedPerTenant(t *testing.T) {
	t.Parallel()
	f := setup(t)
	*f.h = *commands.New(f.d.Pool, commands.Config{MaxPendingReservations: 5})
	count := func(tenant, state string) (n int) {
		t.Helper()
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM reservations WHERE tenant_id = $1 AND state = $2",
			tenant, state).Scan(&n))
		return n
	}
	used := func(tenant string) (n int64) {
		t.Helper()
		for _, res := range []string{core.ResourceGPU, core.ResourceVCPU, core.ResourceMemory, core.ResourceDisk} {
			q, err := f.d.Q.QuotaUsageGet(f.ctx, dbQuota(tenant, res))
			require.NoError(t, err)
			n += q.Used
		}
		return n
	}

	// The pool has no node yet: nothing fits, every create waits. Each
	// asks for one unit of another resource, so that their quota rows do
	// not serialise them: only the cap's own lock does.
	asks := []commands.CreateReservation{{GPUs: 1}, {VCPU: 1}, {MemoryMB: 1}, {DiskGB: 1}}
	const tries = 12
	results := make([]commands.ReservationResult, tries)
	errs := make([]error, tries)
	var wg sync.WaitGroup
	start, end := window(0, 2)
	for i := range tries {
		cmd := asks[i%len(asks)]
		cmd.PoolID, cmd.Start, cmd.End = "fra1-gpu", start, end
		wg.Go(func() {
			results[i], errs[i] = f.h.CreateReservation(f.ctx, tenantA, cmd)
		})
	}
	wg.Wait()
	var pending []commands.ReservationResult
	for i, err := range errs {
		if err == nil {
			require.Equal(t, core.ReservationPending, results[i].Reservation.State)
			pending = append(pending, results[i])
			continue
		}
		require.Equal(t, core.CodeQuotaExceeded, core.CodeOf(err), "err: %v", err)
		require.ErrorContains(t, err, "tenant acme has 5 pending reservations, the most it may have waiting")
	}
	require.Len(t, pending, 5)
	require.Equal(t, 5, count("acme", "pending"), "the refused creates wrote nothing")
	require.Equal(t, int64(5), used("acme"), "the refused creates charged nothing")

	// Another tenant's line is its own.
	other := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1})
	require.Equal(t, core.ReservationPending, other.Reservation.State)

	// A create that books is not counted against the cap.
	f.node(t, "n1", exclusive)
	booked := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start.Add(4 * 3600e9), End: end.Add(4 * 3600e9)})
	require.Equal(t, core.ReservationBooked, booked.Reservation.State)

	// A cancel makes room for one more.
	_, err := f.h.CancelReservation(f.ctx, tenantA, commands.CancelReservation{ReservationID: pending[0].Reservation.ID})
	require.NoError(t, err)
	again := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2})
	require.Equal(t, core.ReservationPending, again.Reservation.State, "two GPUs fit on no node of one")
	_, err = f.h.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 2, Start: start, End: end})
	require.Equal(t, core.CodeQuotaExceeded, core.CodeOf(err), "err: %v", err)
}
