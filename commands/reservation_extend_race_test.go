package commands_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// Two extends of one reservation race: the one that read the reservation
// first commits second and finds the other's added segment in its way.
// That is a lost race, not another reservation's booking: without If-Match
// it runs again from the new end and succeeds; with If-Match it is the
// version conflict; and an idempotency key keeps nothing of the lost race.
func TestConcurrentExtendsOfOneReservation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ifVersion bool
		key       string
	}{{name: "without If-Match"}, {name: "with If-Match", ifVersion: true}, {name: "with an idempotency key", key: "k1"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.node(t, "n1", exclusive)
			res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
			r := res.Reservation

			pause := pgtest.NewPauseAfter("ReservationGet") // the slow extend has read the reservation, not yet booked
			pool, err := pg.Connect(f.ctx, f.d.URL, pg.PoolOptions{MaxConns: 2, IdleInTxTimeout: time.Minute, Tracer: pause})
			require.NoError(t, err)
			t.Cleanup(pool.Close)
			slow := commands.New(pool, commands.Config{})

			later := commands.ExtendReservation{ReservationID: r.ID, NewEnd: r.End.Add(2 * time.Hour), IdempotencyKey: tc.key}
			if tc.ifVersion {
				later.IfVersion = r.Version
			}
			var slowRes commands.ReservationResult
			var slowErr error
			done := make(chan struct{})
			go func() {
				defer close(done)
				slowRes, slowErr = slow.ExtendReservation(f.ctx, tenantA, later)
			}()
			<-pause.Reached()
			won, err := f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: r.ID, NewEnd: r.End.Add(time.Hour)})
			require.NoError(t, err)
			pause.Proceed()
			<-done

			require.NotContains(t, errString(slowErr), "another reservation", "the race is not another reservation's booking")
			if tc.ifVersion {
				require.Equal(t, core.CodeConflict, core.CodeOf(slowErr), "%v", slowErr)
				return
			}
			require.NoError(t, slowErr)
			require.True(t, slowRes.Reservation.End.Equal(later.NewEnd), "extended from the winner's end to its own")
			require.Equal(t, won.Reservation.Version+1, slowRes.Reservation.Version)
			f.requireInvariants(t)
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
