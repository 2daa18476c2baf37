package workqueue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/workqueue"
)

// A batch that outlasts the lease TTL keeps its shard: the worker renews
// its shard leases (and the claims of its running items) on a timer while
// items run, in RunOnce as in Run. The handler blocks while simulated time
// moves 20 s past the claim, four renewal periods and more than one TTL;
// no other owner can take the shard meanwhile, and when the handler
// returns its completion is recorded. Before the timer, RunOnce renewed
// only before its claim and Run only when a slot freed, so another worker
// took the shard 15 s into the batch and the first one's completion was
// fenced away.
func TestShardLeaseRenewedDuringLongBatch(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"RunOnce", "Run"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := pgtest.New(t)
			const key = "long-batch"
			shard := workqueue.ShardLeaseName(workqueue.ShardOf(key))
			w := workqueue.NewWorker(d.Pool, "long", nil, nil)
			w.RenewEvery = 5 * time.Millisecond // wall time: the test moves simulated time itself
			w.ClaimTTL = 10 * time.Second       // shorter than the batch: the claim must be kept too
			started, release := make(chan struct{}), make(chan struct{})
			var runs atomic.Int64
			w.Handle(kind, func(ctx context.Context, it workqueue.Item) error {
				if runs.Add(1) == 1 {
					close(started)
				}
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			enqueue(t, d, key, 0)

			runCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				if mode == "RunOnce" {
					n, err := w.RunOnce(runCtx)
					if err == nil && n != 1 {
						err = errors.New("RunOnce ran no item")
					}
					done <- err
					return
				}
				w.Run(runCtx, time.Hour, nil) // no poll, no poke: only the timer renews
				done <- nil
			}()
			select {
			case <-started:
			case <-time.After(30 * time.Second):
				t.Fatal("the item never started")
			}

			for range 4 { // 4 × 5 s of simulated time: 20 s, past the 15 s TTL
				now := d.AdvanceSimClock(t, lease.RenewEvery)
				require.Eventually(t, func() bool {
					l, err := d.Q.LeaseGet(ctx, shard)
					if err != nil || l.Owner != "long" || l.ExpiresAt.Before(now.Add(lease.TTL)) {
						return false
					}
					r, ok := row(t, d, key)
					return ok && r.ClaimedUntil != nil && r.ClaimedUntil.After(now)
				}, 10*time.Second, 5*time.Millisecond,
					"the shard lease and the item's claim are renewed while the item runs (simulated now %s)", now)
			}
			heir, err := lease.AcquireMany(ctx, d.Q, []string{shard}, "heir", lease.TTL)
			require.NoError(t, err)
			require.Empty(t, heir, "no other owner can take the shard of a running batch")

			close(release)
			if mode == "RunOnce" {
				require.NoError(t, <-done)
			}
			require.Eventually(t, func() bool { _, ok := row(t, d, key); return !ok }, 10*time.Second, 5*time.Millisecond,
				"the item's completion is recorded under the renewed lease")
			require.Equal(t, int64(1), runs.Load(), "the item ran once: its own worker did not claim it again")
		})
	}
}

// A wake-up that arrives while an item runs is not pushed back by the
// run's own reschedule: the enqueue bumped gen, so the key is due now, as
// it would be had the run completed (WorkQueueComplete keeps a dirtied row
// the same way). A run that was not dirtied is rescheduled as it asked.
func TestRescheduleKeepsFreshWakeup(t *testing.T) {
	t.Parallel()
	for name, outcome := range map[string]error{
		"again":  workqueue.Again(30 * time.Second),
		"failed": errors.New("node unreachable"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := pgtest.New(t)
			w := workqueue.NewWorker(d.Pool, "w", nil, nil)
			w.Handle(kind, func(ctx context.Context, it workqueue.Item) error {
				if it.Key == "dirtied" {
					enqueue(t, d, it.Key, 0) // the state changes again during the run
				}
				return outcome
			})
			enqueue(t, d, "dirtied", 0)
			enqueue(t, d, "clean", 0)
			now := d.Now(t)

			require.Equal(t, 2, runOnce(t, w))
			r, ok := row(t, d, "dirtied")
			require.True(t, ok)
			require.Nil(t, r.ClaimedUntil)
			require.False(t, r.NotBefore.After(now),
				"the wake-up that arrived during the run is due now, not at %s", r.NotBefore)
			r, ok = row(t, d, "clean")
			require.True(t, ok)
			require.True(t, r.NotBefore.After(now), "an undisturbed run is rescheduled as it asked")

			require.Equal(t, 1, runOnce(t, w), "the dirtied key runs again at once")
		})
	}
}
