package commands_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// A retry under an Idempotency-Key is the same request when its times are
// the same instants, whatever offset they are written with: a client that
// sent 16:00+05:30 and retries with 10:30Z (or the other way round) gets
// the stored answer, not 422 IDEMPOTENCY_KEY_REUSED for a window it did
// not change.
func TestIdempotentRetryWithTheSameInstantsInAnotherOffset(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	ist := time.FixedZone("IST", 5*3600+1800)
	s, e := window(1, 2)
	cmd := commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, Start: s.In(ist), End: e.In(ist), IdempotencyKey: "k-offset"}
	first, err := f.h.CreateReservation(f.ctx, tenantA, cmd)
	require.NoError(t, err)

	retry := cmd
	retry.Start, retry.End = s.UTC(), e.UTC()
	replay, err := f.h.CreateReservation(f.ctx, tenantA, retry)
	require.NoError(t, err, "the same window, written in UTC, is the same request")
	require.Equal(t, first, replay, "the stored response is replayed")
	require.Equal(t, 1, f.countEvents(t, core.EventReservationBooked))

	ext := commands.ExtendReservation{ReservationID: first.Reservation.ID, NewEnd: e.Add(time.Hour).UTC(), IdempotencyKey: "k-offset-ext"}
	extended, err := f.h.ExtendReservation(f.ctx, tenantA, ext)
	require.NoError(t, err)
	ext.NewEnd = ext.NewEnd.In(ist)
	again, err := f.h.ExtendReservation(f.ctx, tenantA, ext)
	require.NoError(t, err, "the same new end, written in +05:30, is the same request")
	require.Equal(t, extended, again, "the stored response is replayed")
	require.Equal(t, 1, f.countEvents(t, core.EventReservationExtended))
	f.requireInvariants(t)
}
