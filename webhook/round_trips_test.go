package webhook_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/webhook"
)

// tracedPool is a one-connection pool on d whose statements count in the
// RoundTrips of their context.
func tracedPool(t *testing.T, d *pgtest.DB, log *pgtest.StatementLog) *pgxpool.Pool {
	t.Helper()
	pool, err := pg.Connect(context.Background(), d.URL, pg.PoolOptions{MaxConns: 1,
		IdleInTxTimeout: time.Minute, Tracer: pg.RoundTripTracer{Next: log}})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// TestDeliveryRoundTripBudget holds a successful delivery to its budget:
// after the POST, one transaction whose statements travel with its BEGIN
// and then its COMMIT (2 round trips) records the attempt, frees the slot
// and completes the work item; the whole run of the worker, from the
// renewal of its shard leases and the claim (and the claim's read, which
// takes the slot) to the completion, takes at most 5 (15 before, 11 of
// them after the POST). Counted on a warm pool, as the benchmark counts
// them.
func TestDeliveryRoundTripBudget(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	log := &pgtest.StatementLog{}
	pool := tracedPool(t, d, log)
	logger := slog.New(slog.DiscardHandler)
	svc := webhook.New(pool, commands.New(pool, commands.Config{}), webhook.Config{AllowPrivate: true, Rand: noJitter}, logger)
	w := workqueue.NewWorker(pool, "budget-worker", clock.New(logger), logger)
	w.Handle(webhook.KindDeliver, svc.Deliver)
	w.HandlePrefetch(webhook.KindDeliver, svc.Prefetch)
	disp := outbox.NewTxDispatcher(pool, "budget-dispatcher", svc.Scheduler(), logger)

	var counts atomic.Pointer[pg.RoundTrips]
	var atPost atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		if c := counts.Load(); c != nil {
			atPost.Store(c.RoundTrips.Load())
		}
		rw.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)
	f := &fixture{pg: d, svc: svc, disp: disp, worker: w}
	ep := f.createEndpoint(t, acmeMember, rcv.URL, "reservation.booked")

	deliver := func(name string) (whole, afterPost int64) {
		t.Helper()
		dl := f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.booked"))
		log.Take()
		c := &pg.RoundTrips{}
		counts.Store(c)
		n, err := w.RunOnce(pg.WithRoundTrips(context.Background(), c))
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, webhook.StateSucceeded, f.delivery(t, dl.ID).State)
		_, err = d.Q.WorkQueueGet(context.Background(), db.WorkQueueGetParams{Kind: webhook.KindDeliver, Key: dl.ID.String()})
		require.ErrorIs(t, err, pgx.ErrNoRows, "the delivery completed its work item")
		whole, afterPost = c.RoundTrips.Load(), c.RoundTrips.Load()-atPost.Load()
		t.Logf("%s: %d statements, %d round trips (%d after the POST), %d prepares\n%s",
			name, c.Statements.Load(), whole, afterPost, c.Prepares.Load(), log.Take())
		require.Zero(t, c.Prepares.Load(), "the pool was warm")
		return whole, afterPost
	}
	for i := range 2 { // prepares every statement on the one connection
		log.Take()
		dl := f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.booked"))
		require.Equal(t, 1, f.runWorker(t), "warm-up %d", i)
		require.Equal(t, webhook.StateSucceeded, f.delivery(t, dl.ID).State)
	}
	whole, afterPost := deliver("delivery")
	require.LessOrEqual(t, afterPost, int64(2), "round trips after the POST")
	require.LessOrEqual(t, whole, int64(5), "round trips per delivery, claim included")
}

// TestSchedulerEnqueuesABatchInOneRoundTrip: however many deliveries a
// batch of events makes, the scheduler inserts them in one statement and
// enqueues their work items in one more.
func TestSchedulerEnqueuesABatchInOneRoundTrip(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	pool := tracedPool(t, d, &pgtest.StatementLog{})
	svc := webhook.New(pool, commands.New(pool, commands.Config{}), webhook.Config{AllowPrivate: true}, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	for i := range 4 {
		_, err := svc.CreateEndpoint(ctx, acmeMember, webhook.CreateEndpoint{URL: fmt.Sprintf("http://127.0.0.1:1/%d", i)})
		require.NoError(t, err)
	}
	var batch []outbox.Stored
	for range 5 {
		batch = append(batch, outbox.Stored{Event: core.Event{ID: uuid.New(), TenantID: "acme", Type: "reservation.booked", Subject: "x/1"}, Position: afterEveryEndpoint})
	}
	var tx pgx.Tx
	c := &pg.RoundTrips{}
	require.NoError(t, pg.InTx(ctx, pool, func(t2 pgx.Tx) error {
		tx = t2
		return svc.Scheduler().Apply(pg.WithRoundTrips(ctx, c), tx, batch)
	}))
	require.EqualValues(t, 2, c.RoundTrips.Load(), "one to insert the deliveries, one to enqueue them")
	var items int
	require.NoError(t, d.Pool.QueryRow(ctx, `SELECT count(*) FROM work_queue WHERE kind = $1`, webhook.KindDeliver).Scan(&items))
	require.Equal(t, 20, items, "4 endpoints × 5 events")
}
