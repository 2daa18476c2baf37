package workqueue

import (
	"context"
	"fmt"
	"time"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
)

// runKey names a running item.
type runKey struct{ kind, key string }

// begin records that it is claimed and about to run, until end: the lease
// keeper extends its claim meanwhile, and no pool of the process gives up
// its shard (shardUse). It is counted from the claim on, not from the
// start of its run, so that an item waiting for a free slot (RunOnce)
// keeps its shard and its claim too.
func (w *Worker) begin(it Item) {
	w.mu.Lock()
	w.running[runKey{it.Kind, it.Key}]++
	w.mu.Unlock()
	w.use.start(it.Lease.Name)
}

// end is the end of what begin began.
func (w *Worker) end(it Item) {
	w.use.stop(it.Lease.Name)
	k := runKey{it.Kind, it.Key}
	w.mu.Lock()
	if w.running[k]--; w.running[k] <= 0 {
		delete(w.running, k)
	}
	w.mu.Unlock()
}

// keepLeases renews, every RenewEvery until the returned stop is called
// (or ctx ends), the shard leases the worker holds and the claims of the
// items it runs, whenever items are running. Without it a batch longer
// than lease.TTL lost its shards to another worker while it still worked
// them, and its outcome was fenced away. It never takes a free shard:
// a worker busy with long items leaves those to idle workers. Its renewal
// is a balance (renewShards) like the claims': it renews the worker's
// membership too, and gives up surplus shards that no item runs under.
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
	kinds := make([]string, 0, len(w.running))
	keys := make([]string, 0, len(w.running))
	for k := range w.running {
		kinds, keys = append(kinds, k.kind), append(keys, k.key)
	}
	w.mu.Unlock()

	q := db.New(w.pool)
	if _, err := w.renewShards(ctx, q, false); err != nil {
		return err
	}
	busy := w.use.busy()
	w.mu.Lock()
	lost := 0
	for _, name := range busy {
		if _, ok := w.held[shardNumber(name)]; !ok {
			lost++
		}
	}
	w.mu.Unlock()
	if lost > 0 {
		w.logger.Warn("shard leases lost while items ran: their outcomes will be fenced", "lost", lost)
	}
	if _, err := q.WorkQueueExtendClaims(ctx, db.WorkQueueExtendClaimsParams{
		ClaimSeconds: w.ClaimTTL.Seconds(), Kinds: kinds, Keys: keys, Claimer: w.owner,
	}); err != nil {
		return fmt.Errorf("extend claims: %w", err)
	}
	return nil
}
