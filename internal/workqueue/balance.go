package workqueue

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
)

// MemberPrefix names the membership lease of a worker process:
// "worker:<owner>", renewed with its shards. The live ones are the worker
// processes the shards are spread over.
const MemberPrefix = "worker:"

// shardGroup is the group the worker processes share the shard leases in.
func shardGroup() lease.Group { return lease.Group{Names: allShards(), MemberPrefix: MemberPrefix} }

// allShards is the lease name of every shard.
func allShards() []string {
	names := make([]string, NumShards)
	for i := range names {
		names[i] = ShardLeaseName(int32(i))
	}
	return names
}

// shardNumber is n of the lease name "shard:<n>".
func shardNumber(name string) int32 {
	var n int32
	fmt.Sscanf(name, "shard:%d", &n)
	return n
}

// shardUse counts the items running under each shard lease, over every
// worker pool of the process that shares it (ShareLeasesWith): a shard
// under which an item runs is not given up, whichever pool runs it.
type shardUse struct {
	// gate orders claims and balances: a balance (write lock) reads what
	// is busy and gives shards up with no claim in flight, and a claim
	// (read lock) counts its items (begin) before any balance can run.
	gate sync.RWMutex
	mu   sync.Mutex
	n    map[string]int
}

func newShardUse() *shardUse { return &shardUse{n: map[string]int{}} }

// start counts one item running under the lease name, until stop.
func (u *shardUse) start(name string) {
	u.mu.Lock()
	u.n[name]++
	u.mu.Unlock()
}

// stop ends what start counted.
func (u *shardUse) stop(name string) {
	u.mu.Lock()
	if u.n[name]--; u.n[name] <= 0 {
		delete(u.n, name)
	}
	u.mu.Unlock()
}

// busy lists the leases items run under now, in name order.
func (u *shardUse) busy() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]string, 0, len(u.n))
	for name := range u.n {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// ShareLeasesWith makes w one more pool of with's process: both have the
// same owner, hence the same shard leases, and each counts the items the
// other runs when it decides which shards it may give up, so that one
// pool never gives up a shard under which the other is running an item.
// Call it before Run.
func (w *Worker) ShareLeasesWith(with *Worker) { w.use = with.use }

// renewShards balances the worker's shard leases (lease.Group.Balance):
// it renews its membership and the shards it keeps, gives up its surplus
// unless items of the process run under it (or are being claimed: it
// waits for claims in flight), and takes free shards up to its share when
// take is set. It records the outcome: held, every shard it holds (items
// running under a draining one finish fenced by it), and claimable, the
// shards it keeps, which claims take rows of; the latter is returned. A
// balance that takes also resets the claims' reuse period. The worker's
// clock is anchored to the database's time of the renewal.
func (w *Worker) renewShards(ctx context.Context, q *db.Queries, take bool) (map[int32]lease.Lease, error) {
	w.use.gate.Lock()
	s, err := shardGroup().Balance(ctx, q, w.owner, w.use.busy(), take, lease.TTL)
	w.use.gate.Unlock()
	if err != nil {
		return nil, err
	}
	if w.clock != nil && !s.DBNow.IsZero() {
		w.clock.Anchor(s.DBNow)
	}
	held := make(map[int32]lease.Lease, len(s.Held))
	claimable := make(map[int32]lease.Lease, len(s.Held))
	for i, l := range s.Held {
		held[shardNumber(l.Name)] = l
		if s.Keep[i] {
			claimable[shardNumber(l.Name)] = l
		}
	}
	w.mu.Lock()
	before := len(w.held)
	w.held, w.claimable = held, claimable
	if take {
		w.renewedAt = time.Now()
	}
	w.mu.Unlock()
	if len(held) != before {
		w.logger.Info("work-queue shards rebalanced", "held", len(held), "draining", len(held)-len(claimable),
			"share", s.Target, "workers", s.Members)
	}
	return claimable, nil
}
