package workqueue_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/workqueue"
)

// completeOwn is a handler's own fenced transaction that completes its
// item (workqueue.CompleteIn), sent with its BEGIN; before runs first.
func completeOwn(d *pgtest.DB, before func(ctx context.Context, it workqueue.Item)) workqueue.Handler {
	return func(ctx context.Context, it workqueue.Item) error {
		if before != nil {
			before(ctx, it)
		}
		var held bool
		err := pg.InTxBatch(ctx, d.Pool, func(b *pg.Batch) {
			it.Lease.FenceIn(ctx, b, &held)
			workqueue.CompleteIn(ctx, b, it)
		}, func(pgx.Tx) error {
			if !held {
				return lease.ErrFenced
			}
			return nil
		})
		if err != nil {
			return err
		}
		return workqueue.Completed
	}
}

// A handler that completes its own item in its transaction and returns
// Completed leaves nothing for the worker to do: the row is gone.
func TestHandlerCompletesItsOwnItem(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	enqueue(t, d, "own-1", 0)
	w := workqueue.NewWorker(d.Pool, "w", nil, nil)
	w.Handle(kind, completeOwn(d, nil))
	require.Equal(t, 1, runOnce(t, w))
	_, ok := row(t, d, "own-1")
	require.False(t, ok)
	require.Equal(t, 0, runOnce(t, w))
}

// CompleteIn keeps the gen check: a key dirtied during the run survives,
// unclaimed, and runs again when its enqueue said.
func TestCompleteInKeepsADirtiedKey(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	enqueue(t, d, "own-2", 0)
	w := workqueue.NewWorker(d.Pool, "w", nil, nil)
	runs := 0
	w.Handle(kind, completeOwn(d, func(ctx context.Context, it workqueue.Item) {
		if runs++; runs == 1 {
			enqueue(t, d, it.Key, 0)
		}
	}))
	require.Equal(t, 1, runOnce(t, w))
	r, ok := row(t, d, "own-2")
	require.True(t, ok, "the dirtied key survives its completion")
	require.EqualValues(t, 2, r.Gen)
	require.Nil(t, r.ClaimedBy, "and is no longer claimed")
	require.Equal(t, 1, runOnce(t, w), "it runs again at once")
	_, ok = row(t, d, "own-2")
	require.False(t, ok)
}

// A handler whose fenced transaction finds the shard lost completes
// nothing: the row stays for the new holder.
func TestCompleteInIsFenced(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	enqueue(t, d, "own-3", 0)
	w := workqueue.NewWorker(d.Pool, "zombie", nil, nil)
	w.Handle(kind, completeOwn(d, func(ctx context.Context, it workqueue.Item) {
		d.AdvanceSimClock(t, lease.TTL+time.Second)
		_, err := lease.AcquireMany(ctx, d.Q, []string{it.Lease.Name}, "heir", lease.TTL)
		require.NoError(t, err)
	}))
	require.Equal(t, 1, runOnce(t, w))
	r, ok := row(t, d, "own-3")
	require.True(t, ok, "the fenced completion must not delete the row")
	require.Equal(t, "zombie", *r.ClaimedBy)
}

// EnqueueMany has Enqueue's semantics for each key: a new key gets gen 1
// on its shard; a queued, unclaimed one asked for no earlier than it is due
// is left as it is (gen and due time), one asked for earlier is moved
// earlier and has its gen bumped; a key given twice is enqueued once.
func TestEnqueueMany(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := context.Background()
	enqueue(t, d, "queued", 0)
	enqueue(t, d, "later", time.Hour)
	require.NoError(t, pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		return workqueue.EnqueueMany(ctx, db.New(tx), kind, []string{"queued", "new", "new"}, time.Minute)
	}))
	queued, ok := row(t, d, "queued")
	require.True(t, ok)
	require.EqualValues(t, 1, queued.Gen, "an unclaimed key due earlier is not rewritten")
	require.Equal(t, pgtest.SimEpoch, queued.NotBefore.UTC(), "the earlier due time stands")
	fresh, ok := row(t, d, "new")
	require.True(t, ok)
	require.EqualValues(t, 1, fresh.Gen)
	require.Equal(t, workqueue.ShardOf("new"), fresh.Shard)
	require.Equal(t, pgtest.SimEpoch.Add(time.Minute), fresh.NotBefore.UTC())
	require.NoError(t, workqueue.EnqueueMany(ctx, d.Q, kind, []string{"later"}, time.Minute))
	later, ok := row(t, d, "later")
	require.True(t, ok)
	require.EqualValues(t, 2, later.Gen, "asked for earlier: rewritten")
	require.Equal(t, pgtest.SimEpoch.Add(time.Minute), later.NotBefore.UTC())
	require.NoError(t, workqueue.EnqueueMany(ctx, d.Q, kind, nil, 0), "no keys, no statement")
}

// A claimed key is always dirtied by a wake-up, even one asking for no
// earlier time than it is due: the run in progress must not delete it.
func TestEnqueueDirtiesAClaimedKey(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := context.Background()
	enqueue(t, d, "busy", 0)
	_, err := d.Pool.Exec(ctx, "UPDATE work_queue SET claimed_by = 'w', claimed_until = compute_now() + interval '1 minute' WHERE key = 'busy'")
	require.NoError(t, err)
	enqueue(t, d, "busy", time.Hour)
	r, ok := row(t, d, "busy")
	require.True(t, ok)
	require.EqualValues(t, 2, r.Gen)
	require.Equal(t, pgtest.SimEpoch, r.NotBefore.UTC(), "the earlier due time stands")
}

// EnqueueAllIn sends wake-ups of several kinds as one statement of a
// batch; a kind and key given twice is enqueued once, at its earlier
// delay, and another kind's row of the same key is its own.
func TestEnqueueAllIn(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := context.Background()
	var b pg.Batch
	workqueue.EnqueueAllIn(ctx, &b, workqueue.Wake{Kind: kind, Key: "k", Delay: time.Hour},
		workqueue.Wake{Kind: kind, Key: "k", Delay: time.Minute},
		workqueue.Wake{Kind: "other", Key: "k", Delay: 2 * time.Minute})
	require.NoError(t, pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error { return b.Send(ctx, tx) }))
	mine, ok := row(t, d, "k")
	require.True(t, ok)
	require.EqualValues(t, 1, mine.Gen)
	require.Equal(t, pgtest.SimEpoch.Add(time.Minute), mine.NotBefore.UTC(), "the earlier of the two delays")
	other, err := d.Q.WorkQueueGet(ctx, db.WorkQueueGetParams{Kind: "other", Key: "k"})
	require.NoError(t, err)
	require.Equal(t, pgtest.SimEpoch.Add(2*time.Minute), other.NotBefore.UTC())
	require.Equal(t, workqueue.ShardOf("k"), other.Shard)
}
