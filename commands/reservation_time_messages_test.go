package commands_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// A refusal about a reservation's times shows them as they are stored, to
// the microsecond: to the second, a window 90 days and 0.25 s long read as
// "[X, X+90d) is longer" than 90 days, and an end short of the current one
// by half a second as "07:09:37Z is not after 07:09:37Z". Times sent less
// than a microsecond apart say why they read the same.
func TestReservationTimeRefusalsShowTheStoredTimes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	s, e := window(1, 2)
	s, e = s.Add(410121*time.Microsecond), e.Add(600*time.Millisecond)
	r := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: s, End: e}).Reservation

	refusal := func(err error) string {
		t.Helper()
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%v", err)
		return err.Error()
	}
	long := s.Add(commands.DefaultMaxReservationLength + 250*time.Millisecond)
	_, err := f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: r.ID, NewEnd: long})
	require.Contains(t, refusal(err), "[2030-01-01T01:00:00.410121Z, 2030-04-01T01:00:00.660121Z) is longer")

	_, err = f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: r.ID, NewEnd: e.Add(-100 * time.Millisecond)})
	require.Contains(t, refusal(err), "the new end 2030-01-01T02:00:00.5Z is not after the current end 2030-01-01T02:00:00.6Z")

	_, err = f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: r.ID, NewEnd: e.Add(999)})
	require.Contains(t, refusal(err), "the new end 2030-01-01T02:00:00.6Z is not after the current end 2030-01-01T02:00:00.6Z (times are kept to the microsecond)")

	_, err = f.h.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1,
		Start: s.Add(time.Nanosecond), End: s.Add(2 * time.Nanosecond)})
	require.Contains(t, refusal(err), "end 2030-01-01T01:00:00.410121Z must be after start 2030-01-01T01:00:00.410121Z (times are kept to the microsecond)")

	far := f.d.Now(t).Add(commands.DefaultMaxBookingHorizon + 1500*time.Millisecond)
	_, err = f.h.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, Start: far, End: far.Add(time.Hour)})
	require.Contains(t, refusal(err), storedTime(far)+" is later")
	f.requireInvariants(t)
}

func storedTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
