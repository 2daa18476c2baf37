package workqueue_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/workqueue"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const kind = "test.reconcile"

func enqueue(t *testing.T, d *pgtest.DB, key string, delay time.Duration) {
	t.Helper()
	require.NoError(t, pgx.BeginFunc(context.Background(), d.Pool, func(tx pgx.Tx) error {
		return workqueue.Enqueue(context.Background(), db.New(tx), kind, key, delay)
	}))
}

func row(t *testing.T, d *pgtest.DB, key string) (db.WorkQueue, bool) {
	t.Helper()
	r, err := d.Q.WorkQueueGet(context.Background(), db.WorkQueueGetParams{Kind: kind, Key: key})
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false
	}
	require.NoError(t, err)
	return r, true
}

func runOnce(t *testing.T, w *workqueue.Worker) int {
	t.Helper()
	n, err := w.RunOnce(context.Background())
	require.NoError(t, err)
	return n
}

func TestEnqueueInRolledBackTransactionLeavesNothing(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	err := pgx.BeginFunc(context.Background(), d.Pool, func(tx pgx.Tx) error {
		require.NoError(t, workqueue.Enqueue(context.Background(), db.New(tx), kind, "k", 0))
		return errors.New("the change failed")
	})
	require.Error(t, err)
	_, ok := row(t, d, "k")
	require.False(t, ok)
}

func TestKeyDirtiedDuringRunSurvivesAndRunsAgain(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	w := workqueue.NewWorker(d.Pool, "w1", nil, nil)
	runs := 0
	w.Handle(kind, func(ctx context.Context, it workqueue.Item) error {
		runs++
		if runs == 1 {
			enqueue(t, d, "node-1", 0) // the state changes again while we reconcile
		}
		return nil
	})
	enqueue(t, d, "node-1", 0)

	require.Equal(t, 1, runOnce(t, w))
	r, ok := row(t, d, "node-1")
	require.True(t, ok, "a key dirtied during its run must survive the run")
	require.Equal(t, int64(2), r.Gen)
	require.Nil(t, r.ClaimedUntil)

	require.Equal(t, 1, runOnce(t, w), "and run again")
	require.Equal(t, 2, runs)
	_, ok = row(t, d, "node-1")
	require.False(t, ok, "a clean run deletes the row")
}

// A claim protects a row only while its owner holds the row's shard: the
// worker that takes the shard over runs the row at once instead of waiting
// for claimed_until (after a SIGKILL that was a minute of stalled work).
func TestCrashedClaimIsTakenOverWithTheShard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	enqueue(t, d, "res-1", 0)

	// Worker A takes the shard and claims the row, then dies mid-run.
	crashed := workqueue.NewWorker(d.Pool, "a", nil, nil)
	crashed.Handle(kind, func(ctx context.Context, it workqueue.Item) error { panic("unreachable") })
	_, err := lease.AcquireMany(ctx, d.Q, []string{workqueue.ShardLeaseName(workqueue.ShardOf("res-1"))}, "a", lease.TTL)
	require.NoError(t, err)
	claimed, err := d.Q.WorkQueueClaim(ctx, db.WorkQueueClaimParams{
		ClaimSeconds: crashed.ClaimTTL.Seconds(), Claimer: "a",
		Shards: []int32{workqueue.ShardOf("res-1")}, Kinds: []string{kind}, MaxRows: 10,
	})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	again, err := d.Q.WorkQueueClaim(ctx, db.WorkQueueClaimParams{
		ClaimSeconds: crashed.ClaimTTL.Seconds(), Claimer: "a",
		Shards: []int32{workqueue.ShardOf("res-1")}, Kinds: []string{kind}, MaxRows: 10,
	})
	require.NoError(t, err)
	require.Empty(t, again, "the owner's own claim still guards the row until claimed_until")

	b := workqueue.NewWorker(d.Pool, "b", nil, nil)
	var ran []string
	b.Handle(kind, func(ctx context.Context, it workqueue.Item) error { ran = append(ran, it.Key); return nil })

	require.Equal(t, 0, runOnce(t, b), "a's shard lease is live: b cannot see the row")
	d.AdvanceSimClock(t, lease.TTL+time.Second)
	require.Equal(t, 1, runOnce(t, b), "b holds the shard now and takes a's claim over without waiting for claimed_until")
	require.Equal(t, []string{"res-1"}, ran)
	_, ok := row(t, d, "res-1")
	require.False(t, ok)
}

// A worker whose shard lease was taken over while its handler ran cannot
// complete the row: the fenced bookkeeping aborts and the row stays for the
// new owner.
func TestWorkerThatLostItsShardCannotCompleteTheRow(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	enqueue(t, d, "res-2", 0)
	zombie := workqueue.NewWorker(d.Pool, "zombie", nil, nil)
	zombie.Handle(kind, func(ctx context.Context, it workqueue.Item) error {
		// The zombie stalls past its lease; another process takes the shard.
		d.AdvanceSimClock(t, lease.TTL+time.Second)
		_, err := lease.AcquireMany(ctx, d.Q, []string{it.Lease.Name}, "heir", lease.TTL)
		require.NoError(t, err)
		return nil
	})
	require.Equal(t, 1, runOnce(t, zombie))
	r, ok := row(t, d, "res-2")
	require.True(t, ok, "the fenced completion must not delete the row")
	require.Equal(t, "zombie", *r.ClaimedBy)
}

func TestAgainAndBackoff(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	w := workqueue.NewWorker(d.Pool, "w", nil, nil)
	results := []error{workqueue.Again(30 * time.Second), errors.New("boom"), nil}
	w.Handle(kind, func(ctx context.Context, it workqueue.Item) error {
		err := results[0]
		results = results[1:]
		return err
	})
	enqueue(t, d, "k", 0)

	require.Equal(t, 1, runOnce(t, w))
	r, _ := row(t, d, "k")
	require.Equal(t, pgtest.SimEpoch.Add(30*time.Second), r.NotBefore.UTC(), "Again reschedules without failing")
	require.Nil(t, r.LastError)
	require.Equal(t, 0, runOnce(t, w))

	d.AdvanceSimClock(t, 30*time.Second)
	require.Equal(t, 1, runOnce(t, w))
	r, _ = row(t, d, "k")
	require.Equal(t, "boom", *r.LastError)
	require.Equal(t, pgtest.SimEpoch.Add(32*time.Second), r.NotBefore.UTC(), "second attempt failed: 2 s back-off")

	d.AdvanceSimClock(t, 2*time.Second)
	require.Equal(t, 1, runOnce(t, w))
	_, ok := row(t, d, "k")
	require.False(t, ok)
}

func TestDelayedItemWaitsForSimulatedTime(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	w := workqueue.NewWorker(d.Pool, "w", nil, nil)
	w.Handle(kind, func(ctx context.Context, it workqueue.Item) error { return nil })
	enqueue(t, d, "later", time.Hour)
	require.Equal(t, 0, runOnce(t, w))
	d.AdvanceSimClock(t, time.Hour)
	require.Equal(t, 1, runOnce(t, w))
}

// A slow item (a webhook endpoint hanging until its timeout) must not hold
// up the other items of the batch: the slow handler only returns once the
// fast one has finished, which deadlocks if items ran one after another.
func TestSlowItemDoesNotHoldUpOthers(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	w := workqueue.NewWorker(d.Pool, "w", nil, nil)
	fastDone := make(chan struct{})
	w.Handle(kind, func(ctx context.Context, it workqueue.Item) error {
		if it.Key == "fast" {
			close(fastDone)
			return nil
		}
		select {
		case <-fastDone:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("the fast item never ran while the slow one was running")
		}
	})
	enqueue(t, d, "slow", 0)
	enqueue(t, d, "fast", time.Millisecond) // due later, so claimed second
	d.AdvanceSimClock(t, time.Second)
	require.Equal(t, 2, runOnce(t, w))
	_, slowLeft := row(t, d, "slow")
	require.False(t, slowLeft, "the slow item completed")
}

// Run does not wait for the next poll after a full batch: with a poll
// interval of an hour and no poke, five due items still all run in batches
// of two. (One worker used to deliver at most Batch webhooks per poll.)
func TestRunContinuesAfterAFullBatch(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	for i := range 5 {
		enqueue(t, d, fmt.Sprintf("full-%d", i), 0)
	}
	w := workqueue.NewWorker(d.Pool, "w", nil, nil)
	w.Batch = 2
	var ran atomic.Int64
	w.Handle(kind, func(ctx context.Context, it workqueue.Item) error { ran.Add(1); return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx, time.Hour, nil) }()
	defer func() { cancel(); <-done }()
	require.Eventually(t, func() bool { return ran.Load() == 5 }, 30*time.Second, 10*time.Millisecond,
		"every due item runs without waiting for the hourly poll")
}

// Run claims again as soon as it has a free slot: an item enqueued while a
// slow one runs (a webhook endpoint hanging until its timeout) runs at
// once, instead of after the slow one's whole batch.
func TestRunDoesNotWaitForASlowItemsBatch(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	w := workqueue.NewWorker(d.Pool, "w", nil, nil)
	w.Concurrency = 2
	release := make(chan struct{})
	slowRunning := make(chan struct{})
	var fast atomic.Int64
	w.Handle(kind, func(ctx context.Context, it workqueue.Item) error {
		if it.Key == "slow" {
			close(slowRunning)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}
		fast.Add(1)
		return nil
	})
	enqueue(t, d, "slow", 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx, 10*time.Millisecond, nil) }()
	defer func() { close(release); cancel(); <-done }()
	<-slowRunning
	for i := range 5 {
		enqueue(t, d, fmt.Sprintf("fast-%d", i), 0)
	}
	require.Eventually(t, func() bool { return fast.Load() == 5 }, 10*time.Second, 5*time.Millisecond,
		"the items enqueued after the slow one run while it is still running, one slot for them all")
	_, slowLeft := row(t, d, "slow")
	require.True(t, slowLeft, "the slow item is still running")
}

// A poke that arrives while every slot is busy is not lost: the item it
// announced runs as soon as a slot frees, not at the next poll (an hour
// here). Webhook deliveries enqueued while the delivery pool was full used
// to wait for the poll this way.
func TestPokeWhileSlotsAreBusyIsKept(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	w := workqueue.NewWorker(d.Pool, "w", nil, nil)
	w.Concurrency = 1
	release := make(chan struct{})
	busyRunning := make(chan struct{})
	ranLater := make(chan struct{})
	w.Handle(kind, func(ctx context.Context, it workqueue.Item) error {
		switch it.Key {
		case "busy":
			close(busyRunning)
			<-release
		case "later":
			close(ranLater)
		}
		return nil
	})
	enqueue(t, d, "busy", 0)
	poke := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx, time.Hour, poke) }()
	defer func() { cancel(); <-done }()
	poke <- struct{}{}
	<-busyRunning
	enqueue(t, d, "later", 0)
	poke <- struct{}{} // the only slot is busy
	require.Eventually(t, func() bool { return len(poke) == 0 }, 10*time.Second, time.Millisecond, "the loop took the poke")
	close(release)
	select {
	case <-ranLater:
	case <-time.After(30 * time.Second):
		t.Fatal("the item announced while the slot was busy waited for the hourly poll")
	}
}
