package workqueue

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
)

// runKey names a running item.
type runKey struct{ kind, key string }

// allShards is the lease name of every shard.
func allShards() []string {
	names := make([]string, NumShards)
	for i := range names {
		names[i] = ShardLeaseName(int32(i))
	}
	return names
}

// renewShards takes or renews the shard leases named (a held one is
// renewed at its epoch, a free one taken) and records the outcome: the
// named shards the worker no longer holds are dropped, the others it holds
// are kept as they were. A renewal of every shard also resets the claims'
// reuse period. The worker's clock is anchored to the database's time of
// the renewal.
func (w *Worker) renewShards(ctx context.Context, q *db.Queries, names []string) (map[int32]lease.Lease, error) {
	held, err := lease.AcquireMany(ctx, q, names, w.owner, lease.TTL)
	if err != nil {
		return nil, err
	}
	if len(held) > 0 && w.clock != nil {
		w.clock.Anchor(held[0].DBNow)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	next := maps.Clone(w.held)
	if next == nil {
		next = map[int32]lease.Lease{}
	}
	for _, name := range names {
		delete(next, shardNumber(name))
	}
	for _, l := range held {
		next[shardNumber(l.Name)] = l
	}
	w.held = next
	if len(names) == NumShards {
		w.renewedAt = time.Now()
	}
	return next, nil
}

// shardNumber is n of the lease name "shard:<n>".
func shardNumber(name string) int32 {
	var n int32
	fmt.Sscanf(name, "shard:%d", &n)
	return n
}

// track records that it is running until the returned function is called,
// so that the lease keeper extends its claim meanwhile.
func (w *Worker) track(it Item) (done func()) {
	k := runKey{it.Kind, it.Key}
	w.mu.Lock()
	w.running[k]++
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		if w.running[k]--; w.running[k] <= 0 {
			delete(w.running, k)
		}
		w.mu.Unlock()
	}
}

// keepLeases renews, every RenewEvery until the returned stop is called
// (or ctx ends), the shard leases the worker holds and the claims of the
// items it runs, whenever items are running. Without it a batch longer
// than lease.TTL lost its shards to another worker while it still worked
// them, and its outcome was fenced away. It never takes a free shard:
// a worker busy with long items leaves those to idle workers.
func (w *Worker) keepLeases(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	every := w.RenewEvery
	if every <= 0 {
		every = lease.RenewEvery
	}
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := w.renewWhileRunning(ctx); err != nil && ctx.Err() == nil {
				w.logger.Error("work queue: renew shard leases while items run", "err", err)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// renewWhileRunning is one turn of the lease keeper.
func (w *Worker) renewWhileRunning(ctx context.Context) error {
	w.mu.Lock()
	if len(w.running) == 0 {
		w.mu.Unlock()
		return nil
	}
	names := make([]string, 0, len(w.held))
	for n := range w.held {
		names = append(names, ShardLeaseName(n))
	}
	kinds := make([]string, 0, len(w.running))
	keys := make([]string, 0, len(w.running))
	for k := range w.running {
		kinds, keys = append(kinds, k.kind), append(keys, k.key)
	}
	w.mu.Unlock()

	q := db.New(w.pool)
	if len(names) > 0 {
		held, err := w.renewShards(ctx, q, names)
		if err != nil {
			return err
		}
		if lost := len(names) - countNamed(held, names); lost > 0 {
			w.logger.Warn("shard leases lost while items ran: their outcomes will be fenced", "lost", lost)
		}
	}
	if _, err := q.WorkQueueExtendClaims(ctx, db.WorkQueueExtendClaimsParams{
		ClaimSeconds: w.ClaimTTL.Seconds(), Kinds: kinds, Keys: keys, Claimer: w.owner,
	}); err != nil {
		return fmt.Errorf("extend claims: %w", err)
	}
	return nil
}

// countNamed counts the shards of names present in held.
func countNamed(held map[int32]lease.Lease, names []string) int {
	n := 0
	for _, name := range names {
		if _, ok := held[shardNumber(name)]; ok {
			n++
		}
	}
	return n
}
