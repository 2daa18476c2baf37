package commands_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// TestRoundTripBudget holds the write path to its round-trip budget: a
// create that books GPUs and all three scalars takes 3 round trips (BEGIN
// with the quota and the candidates, which list the nodes' free atoms; the
// first placement attempt's locks and writes; the reservation with the
// COMMIT), 4 with an idempotency key (its answer is stored after the
// writes); its release 3 (BEGIN with the read, the writes, the unassign
// with the COMMIT). Counted on a warm pool, as the benchmark counts them.
func TestRoundTripBudget(t *testing.T) {
	d := pgtest.New(t)
	log := &pgtest.StatementLog{}
	pool, err := pg.Connect(context.Background(), d.URL, pg.PoolOptions{MaxConns: 1,
		IdleInTxTimeout: time.Minute, Tracer: pg.RoundTripTracer{Next: log}})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	h := commands.New(pool, commands.Config{})
	commandstest.Seed(t, d, h, 2)
	commandstest.Node(t, h, "n1", exclusive, exclusive, exclusive, exclusive)
	commandstest.Node(t, h, "n2", exclusive, exclusive, exclusive, exclusive)

	start, end := window(1, 3)
	run := func(key string) (create, release *pg.RoundTrips) {
		create, release = &pg.RoundTrips{}, &pg.RoundTrips{}
		res, err := h.CreateReservation(pg.WithRoundTrips(context.Background(), create), tenantA,
			commands.CreateReservation{PoolID: commandstest.Pool, GPUs: 1, VCPU: 4, MemoryMB: 1024, DiskGB: 10,
				Start: start, End: end, IdempotencyKey: key})
		require.NoError(t, err)
		require.Equal(t, "booked", string(res.Reservation.State))
		t.Logf("create (key %q): %d statements, %d round trips\n%s", key, create.Statements.Load(), create.RoundTrips.Load(), log.Take())
		_, err = h.ReleaseReservation(pg.WithRoundTrips(context.Background(), release), tenantA,
			commands.ReleaseReservation{ReservationID: res.Reservation.ID})
		require.NoError(t, err)
		t.Logf("release: %d statements, %d round trips\n%s", release.Statements.Load(), release.RoundTrips.Load(), log.Take())
		return create, release
	}
	run("warm-up") // prepares every statement on the one connection
	run("")
	create, release := run("")
	require.Zero(t, create.Prepares.Load()+release.Prepares.Load(), "the pool was warm")
	require.Equal(t, int64(3), create.RoundTrips.Load(), "round trips per create")
	require.Equal(t, int64(3), release.RoundTrips.Load(), "round trips per release")
	keyed, _ := run("k2")
	require.Equal(t, int64(4), keyed.RoundTrips.Load(), "round trips per create with an idempotency key")
}
