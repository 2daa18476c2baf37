package commands_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/workqueue"
)

// Reservation reconcilers are level-triggered and resynced: when their
// work-queue rows are lost, the periodic reservation.resync puts back what
// each live reservation needs (place for a pending one, activation for a
// booked one, expiry for a pending or active one: a booking's activation
// arms its expiry), each due when it would
// have been, so a lost row costs only time. A pending reservation's row is
// its scope's line (reservation.queue, keyed pool:<id>), not one of its own. It runs again every
// ReservationResyncEvery. Before it, a lost row left a reservation booked
// past its start, or holding its quota past its end, for ever.
func TestReservationResync(t *testing.T) {
	t.Parallel()
	f := setup(t)
	t0 := pgtest.SimEpoch
	w := workqueue.NewWorker(f.d.Pool, "w", nil, nil)
	rec := f.h.Reconcilers()
	w.Handle(commands.KindReservationPlace, rec.ReservationPlace)
	w.Handle(commands.KindReservationQueue, rec.ReservationQueue)
	w.Handle(commands.KindReservationActivate, rec.ReservationActivate)
	w.Handle(commands.KindReservationExpire, rec.ReservationExpire)
	w.Handle(commands.KindReservationResync, rec.ReservationResync)

	// pending: no node yet. booked: starts in an hour. active: started.
	pending := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: t0, End: t0.Add(4 * time.Hour)})
	require.Equal(t, core.ReservationPending, pending.Reservation.State)
	f.node(t, "n1", exclusive, exclusive)
	booked := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: t0.Add(time.Hour), End: t0.Add(3 * time.Hour)})
	active := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: t0, End: t0.Add(2 * time.Hour)})
	require.NoError(t, commandstest.Activate(f.ctx, f.h, active.Reservation.ID))

	lose := func() {
		t.Helper()
		_, err := f.d.Pool.Exec(f.ctx, "DELETE FROM work_queue WHERE kind = ANY($1)",
			[]string{commands.KindReservationQueue, commands.KindReservationActivate, commands.KindReservationExpire})
		require.NoError(t, err)
	}
	due := func(kind, id string) time.Time {
		t.Helper()
		r, err := f.d.Q.WorkQueueGet(f.ctx, dbWork(kind, id))
		if errors.Is(err, pgx.ErrNoRows) {
			require.Failf(t, "reconciler row missing", "%s %s was not put back", kind, id)
		}
		require.NoError(t, err)
		return r.NotBefore.UTC()
	}
	requireRequeued := func(now time.Time) {
		t.Helper()
		require.Equal(t, now, due(commands.KindReservationQueue, commands.PendingQueueKey("fra1-gpu", "")), "pending: its line now")
		require.Equal(t, t0.Add(4*time.Hour), due(commands.KindReservationExpire, pending.Reservation.ID), "pending: expiry at its end")
		require.Equal(t, t0.Add(time.Hour), due(commands.KindReservationActivate, booked.Reservation.ID), "booked: activation at its start")
		require.Equal(t, t0.Add(2*time.Hour), due(commands.KindReservationExpire, active.Reservation.ID), "active: expiry at its end")
		_, err := f.d.Q.WorkQueueGet(f.ctx, dbWork(commands.KindReservationActivate, active.Reservation.ID))
		require.ErrorIs(t, err, pgx.ErrNoRows, "an active reservation needs no activation")
		_, err = f.d.Q.WorkQueueGet(f.ctx, dbWork(commands.KindReservationExpire, booked.Reservation.ID))
		require.ErrorIs(t, err, pgx.ErrNoRows, "a booked reservation's expiry is armed by its activation")
	}

	lose()
	require.NoError(t, f.h.EnsureReservationResync(f.ctx))
	_, err := w.RunOnce(f.ctx)
	require.NoError(t, err)
	requireRequeued(t0)
	require.Equal(t, t0.Add(commands.ReservationResyncEvery), due(commands.KindReservationResync, commands.ReservationResyncKey),
		"the resync runs again every ReservationResyncEvery")

	// Lost again: the next resync, a few minutes later, puts them back.
	lose()
	now := f.d.AdvanceSimClock(t, commands.ReservationResyncEvery).UTC()
	_, err = w.RunOnce(f.ctx)
	require.NoError(t, err)
	requireRequeued(now)

	// And the reconcilers act on what was put back: the booked
	// reservation becomes active at its start, the active one expires at
	// its end.
	lose()
	f.d.AdvanceSimClock(t, 2*time.Hour-commands.ReservationResyncEvery)
	for range 3 {
		_, err = w.RunOnce(f.ctx)
		require.NoError(t, err)
	}
	got, err := f.h.GetReservation(f.ctx, tenantA, booked.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationActive, got.State)
	got, err = f.h.GetReservation(f.ctx, tenantA, active.Reservation.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationExpired, got.State)
	f.requireInvariants(t)
}
