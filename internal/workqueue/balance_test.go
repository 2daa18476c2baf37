package workqueue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/workqueue"
)

// shardHolders counts the live shard leases of each owner.
func shardHolders(t *testing.T, d *pgtest.DB) map[string]int {
	t.Helper()
	rows, err := d.Pool.Query(context.Background(),
		`SELECT owner, count(*) FROM leases
		  WHERE starts_with(name, 'shard:') AND expires_at > compute_now() GROUP BY owner`)
	require.NoError(t, err)
	out := map[string]int{}
	for rows.Next() {
		var owner string
		var n int
		require.NoError(t, rows.Scan(&owner, &n))
		out[owner] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// shardEpochs is the epoch of every shard lease, by name.
func shardEpochs(t *testing.T, d *pgtest.DB) map[string]int64 {
	t.Helper()
	rows, err := d.Pool.Query(context.Background(), `SELECT name, epoch FROM leases WHERE starts_with(name, 'shard:')`)
	require.NoError(t, err)
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var epoch int64
		require.NoError(t, rows.Scan(&name, &epoch))
		out[name] = epoch
	}
	require.NoError(t, rows.Err())
	return out
}

// period is one renewal period: simulated time moves RenewEvery and each
// running worker renews (RunOnce: balance, then claim).
func period(t *testing.T, d *pgtest.DB, ws ...*workqueue.Worker) {
	t.Helper()
	d.AdvanceSimClock(t, lease.RenewEvery)
	for _, w := range ws {
		runOnce(t, w)
	}
}

func counts(m map[string]int, owners ...string) []int {
	out := make([]int, len(owners))
	for i, o := range owners {
		out[i] = m[o]
	}
	return out
}

func idle(d *pgtest.DB, owner string) *workqueue.Worker {
	w := workqueue.NewWorker(d.Pool, owner, nil, nil)
	w.Handle(kind, func(context.Context, workqueue.Item) error { return nil })
	return w
}

// Worker processes share the 16 shards: each holds its share, the first
// ceil(16/n) in member order and the others floor(16/n). Before
// balancing, the first worker kept all 16 and the second idled (16/0).
func TestShardsSpreadOverWorkers(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	a, b, c := idle(d, "a"), idle(d, "b"), idle(d, "c")

	runOnce(t, a)
	require.Equal(t, map[string]int{"a": workqueue.NumShards}, shardHolders(t, d), "a lone worker holds every shard")

	runOnce(t, b)
	for range 3 {
		period(t, d, a, b)
	}
	require.Equal(t, []int{8, 8}, counts(shardHolders(t, d), "a", "b"), "two workers: 8 and 8")

	runOnce(t, c)
	for range 3 {
		period(t, d, a, b, c)
	}
	require.Equal(t, []int{6, 5, 5}, counts(shardHolders(t, d), "a", "b", "c"), "three workers: 6, 5 and 5")

	// c stops: its membership and its shards lapse together, and the
	// others take its shards within a TTL and a renewal period.
	stopped := d.Now(t)
	for d.Now(t).Before(stopped.Add(lease.TTL + lease.RenewEvery)) {
		period(t, d, a, b)
	}
	require.Equal(t, map[string]int{"a": 8, "b": 8}, shardHolders(t, d), "c's shards went to a and b")
}

// With a stable membership no shard changes hands: a worker at its share
// neither gives a shard up nor takes one, so over many periods every
// shard lease keeps its epoch (a takeover increments it).
func TestShardBalanceDoesNotFlap(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ws := []*workqueue.Worker{idle(d, "a"), idle(d, "b"), idle(d, "c")}
	for _, w := range ws {
		runOnce(t, w)
	}
	for range 3 {
		period(t, d, ws...)
	}
	settled := shardEpochs(t, d)
	require.Len(t, settled, workqueue.NumShards)
	for i := range 30 {
		// Workers renew in a different order each period.
		order := slices.Clone(ws)
		for j := range i % len(order) {
			order[0], order[j+1] = order[j+1], order[0]
		}
		period(t, d, order...)
		require.Equal(t, []int{6, 5, 5}, counts(shardHolders(t, d), "a", "b", "c"), "period %d", i)
	}
	require.Equal(t, settled, shardEpochs(t, d), "no shard lease changed hands over 30 periods")
}

// Items keep running exactly once while the shards move between workers,
// and once balanced both workers run some of them.
func TestItemsRunOnceWhileShardsMove(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	var mu sync.Mutex
	ran := map[string][]string{}
	worker := func(owner string) *workqueue.Worker {
		w := workqueue.NewWorker(d.Pool, owner, nil, nil)
		w.Handle(kind, func(_ context.Context, it workqueue.Item) error {
			mu.Lock()
			defer mu.Unlock()
			ran[it.Key] = append(ran[it.Key], owner)
			return nil
		})
		return w
	}
	a, b := worker("a"), worker("b")
	const keys = 64
	for i := range keys / 2 {
		enqueue(t, d, fmt.Sprintf("k%d", i), 0)
	}
	runOnce(t, a)
	runOnce(t, b)
	for i := keys / 2; i < keys; i++ {
		enqueue(t, d, fmt.Sprintf("k%d", i), time.Minute)
	}
	for range time.Minute/lease.RenewEvery + 1 { // the delayed ones come due on the way
		period(t, d, a, b)
	}
	require.Equal(t, []int{8, 8}, counts(shardHolders(t, d), "a", "b"))
	require.Len(t, ran, keys)
	by := map[string]int{}
	for key, owners := range ran {
		require.Len(t, owners, 1, "%s ran once", key)
		by[owners[0]]++
	}
	require.Positive(t, by["a"])
	require.Positive(t, by["b"], "the second worker runs the items of its shards")
}

// keysInShards returns one key in each of the first n shards, by shard.
func keysInShards(n int) map[int32]string {
	out := map[int32]string{}
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprintf("key-%d", i)
		if s := workqueue.ShardOf(k); s < int32(n) && out[s] == "" {
			out[s] = k
		}
	}
	return out
}

// keyInShard is a key in shard n.
func keyInShard(prefix string, n int32) string {
	for i := 0; ; i++ {
		if k := fmt.Sprintf("%s-%d", prefix, i); workqueue.ShardOf(k) == n {
			return k
		}
	}
}

// A worker above its share never gives up a shard under which one of its
// items runs, in either of its process's pools: it drains it (claims
// nothing more of it) and gives it up once the item is done. The items
// complete under the leases they ran under: none is fenced away or run
// twice.
func TestBusySurplusShardDrains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	keys := keysInShards(10) // items run under shards 0-9
	started, release := make(chan string, len(keys)), make(chan struct{})
	releaseItems := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseItems) // a failed test does not leave its items blocked
	a := workqueue.NewWorker(d.Pool, "a", nil, nil)
	a.RenewEvery = 5 * time.Millisecond // wall time: the test moves simulated time itself
	a.Concurrency = len(keys)
	a.Handle(kind, func(ctx context.Context, it workqueue.Item) error {
		started <- it.Key
		<-release
		return nil
	})
	// a's second pool (as compute serve has one for webhook delivery).
	a2 := workqueue.NewWorker(d.Pool, "a", nil, nil)
	a2.ShareLeasesWith(a)
	var ran2 []string
	a2.Handle(kind, func(_ context.Context, it workqueue.Item) error { ran2 = append(ran2, it.Key); return nil })
	for _, k := range keys {
		enqueue(t, d, k, 0)
	}
	done := make(chan int, 1)
	go func() { n, _ := a.RunOnce(ctx); done <- n }()
	for range keys {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("the items never started")
		}
	}

	b := idle(d, "b")
	runOnce(t, b) // b joins: a's share is 8, b's 8
	// a's pools (its lease keeper, a2's claims) give up the idle shards
	// 10-15 and keep the 10 busy ones: 8 its share, 2 drained.
	runOnce(t, a2)
	require.Eventually(t, func() bool { return shardHolders(t, d)["a"] == 10 }, 10*time.Second, 5*time.Millisecond)
	runOnce(t, b)
	require.Equal(t, []int{10, 6}, counts(shardHolders(t, d), "a", "b"))

	// The drained shards are those beyond a's share in name order
	// ("shard:8", "shard:9" sort after the kept 0-7): a claims nothing more
	// of them, and b cannot yet.
	drained, kept := keyInShard("drained", 9), keyInShard("kept", 0)
	enqueue(t, d, drained, 0)
	enqueue(t, d, kept, 0)
	runOnce(t, a2)
	require.Contains(t, ran2, kept, "a claims in the shards it keeps")
	require.NotContains(t, ran2, drained, "and nothing more in the shards it drains")
	_, ok := row(t, d, drained)
	require.True(t, ok)

	releaseItems()
	select {
	case n := <-done:
		require.Equal(t, len(keys), n)
	case <-time.After(30 * time.Second):
		t.Fatal("RunOnce did not return")
	}
	for _, k := range keys {
		_, ok := row(t, d, k)
		require.False(t, ok, "%s completed under its shard lease, drained or not", k)
	}
	for range 2 {
		period(t, d, a2, b)
	}
	require.Equal(t, []int{8, 8}, counts(shardHolders(t, d), "a", "b"), "idle, the drained shards went to b")
	_, ok = row(t, d, drained)
	require.False(t, ok, "b ran the item of the drained shard")
}
