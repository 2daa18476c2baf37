package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// A window shorter than the minimum (1 minute by default) is refused and
// writes nothing: one of a microsecond was booked, charged a quota slot
// and queued node work, and expired before it could activate.
func TestReservationShorterThanTheMinimumIsRefused(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	start := f.pg.Now(t).Add(time.Hour).Truncate(time.Second)
	body := func(length time.Duration) map[string]any {
		return map[string]any{"poolId": "fra1-gpu", "gpus": 1, "start": start.Format(time.RFC3339Nano),
			"end": start.Add(length).Format(time.RFC3339Nano)}
	}
	for _, length := range []time.Duration{time.Microsecond, time.Minute - time.Microsecond} {
		e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPost, "/v1/reservations", f.member, body(length), nil)
		require.Contains(t, e.Message, "a reservation is at least 1m0s long")
		require.Contains(t, e.Message, "is "+length.String())
	}
	require.Zero(t, f.countReservations(t, "acme"), "a refused window writes nothing")
	var rsv reservationJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, body(time.Minute), nil).decode(t, &rsv)
	require.Equal(t, "booked", rsv.State)
}
