// Package workqueue wakes reconcilers through rows in work_queue.
//
// A row is enqueued in the transaction that changed the state, so a wake-up
// exists exactly when the change does. Workers claim due rows of the shards
// they hold leases on (FOR UPDATE SKIP LOCKED), run the handler for the row's
// kind, and delete the row only if its gen is unchanged: a key dirtied during
// its run survives and runs again. A crashed worker's claim lapses after
// claimed_until and another worker takes the row. A handler whose work
// ends in one fenced transaction may complete its row in it (CompleteIn,
// Completed) and spare the worker's own.
package workqueue

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// NumShards is how many shards keys are spread over. Each shard is owned
// through the lease "shard:<n>". Changing it moves keys between shards,
// which is safe: a row is claimed by whoever owns its stored shard.
const NumShards = 16

// ShardOf is the shard of key.
func ShardOf(key string) int32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int32(h.Sum32() % NumShards)
}

// ShardLeaseName is the lease that owns shard n.
func ShardLeaseName(n int32) string { return fmt.Sprintf("shard:%d", n) }

// Enqueue wakes the reconciler of kind for key after delay. q must be bound
// to the caller's transaction. Enqueueing a key that is already queued bumps
// its gen and keeps the earlier due time.
func Enqueue(ctx context.Context, q *db.Queries, kind, key string, delay time.Duration) error {
	err := q.WorkQueueEnqueue(ctx, db.WorkQueueEnqueueParams{
		Kind: kind, Key: key, Shard: ShardOf(key), DelaySeconds: delay.Seconds(),
	})
	if err != nil {
		return fmt.Errorf("enqueue %s %s: %w", kind, key, err)
	}
	return nil
}

// EnqueueIn is Enqueue queued in b, to be sent with the statements around
// it in one round trip (pg.Batch): the caller's transaction sends b.
func EnqueueIn(ctx context.Context, b *pg.Batch, kind, key string, delay time.Duration) {
	pg.Exec(ctx, b, (*db.Queries).WorkQueueEnqueue, db.WorkQueueEnqueueParams{
		Kind: kind, Key: key, Shard: ShardOf(key), DelaySeconds: delay.Seconds(),
	})
}

// Wake is one wake-up: run kind's handler for Key after Delay.
type Wake struct {
	Kind, Key string
	Delay     time.Duration
}

// EnqueueMany is Enqueue for many keys of one kind, in one statement (one
// round trip however many keys), with Enqueue's semantics for each key.
func EnqueueMany(ctx context.Context, q *db.Queries, kind string, keys []string, delay time.Duration) error {
	if len(keys) == 0 {
		return nil
	}
	wakes := make([]Wake, len(keys))
	for i, k := range keys {
		wakes[i] = Wake{Kind: kind, Key: k, Delay: delay}
	}
	if err := q.WorkQueueEnqueueMany(ctx, enqueueManyParams(wakes)); err != nil {
		return fmt.Errorf("enqueue %d %s: %w", len(keys), kind, err)
	}
	return nil
}

// EnqueueAllIn is Enqueue for wakes of any kinds as one statement queued
// in b, sent with the statements around it (pg.Batch).
func EnqueueAllIn(ctx context.Context, b *pg.Batch, wakes ...Wake) {
	if len(wakes) == 0 {
		return
	}
	pg.Exec(ctx, b, (*db.Queries).WorkQueueEnqueueMany, enqueueManyParams(wakes))
}

func enqueueManyParams(wakes []Wake) db.WorkQueueEnqueueManyParams {
	p := db.WorkQueueEnqueueManyParams{Kinds: make([]string, len(wakes)), Keys: make([]string, len(wakes)),
		Shards: make([]int32, len(wakes)), DelaysSeconds: make([]float64, len(wakes))}
	for i, w := range wakes {
		p.Kinds[i], p.Keys[i], p.Shards[i], p.DelaysSeconds[i] = w.Kind, w.Key, ShardOf(w.Key), w.Delay.Seconds()
	}
	return p
}
