package workqueue_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/workqueue"
)

// The Prefetch hook of a kind runs once per claim with the claim's items
// of that kind, before any of them runs, and each handler finds what it
// set for its item.
func TestPrefetchRunsOncePerClaim(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	for _, k := range []string{"p-1", "p-2", "p-3"} {
		enqueue(t, d, k, 0)
	}
	w := workqueue.NewWorker(d.Pool, "w", nil, nil)
	var calls [][]string
	w.HandlePrefetch(kind, func(_ context.Context, items []workqueue.Item) error {
		keys := []string{}
		for i := range items {
			keys = append(keys, items[i].Key)
			items[i].Prefetched = "loaded " + items[i].Key
		}
		calls = append(calls, keys)
		return nil
	})
	var mu sync.Mutex
	got := map[string]any{}
	w.Handle(kind, func(_ context.Context, it workqueue.Item) error {
		mu.Lock()
		defer mu.Unlock()
		got[it.Key] = it.Prefetched
		return nil
	})
	require.Equal(t, 3, runOnce(t, w))
	require.Len(t, calls, 1, "one prefetch for the claim")
	require.ElementsMatch(t, []string{"p-1", "p-2", "p-3"}, calls[0])
	require.Equal(t, map[string]any{"p-1": "loaded p-1", "p-2": "loaded p-2", "p-3": "loaded p-3"}, got)
}
