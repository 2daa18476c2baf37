package workqueue

import "context"

// Prefetch loads, for the items of one kind that one claim took, what
// their handlers would each load on their own, in one round trip, and
// sets it in their Prefetched. It is called only with items that start
// right after it returns (Run claims no more than its free slots;
// RunOnce passes the first Concurrency), so it may also take, for each,
// what its run needs and then frees (a webhook delivery's in-flight
// slot): every item it is called with runs. An error only leaves
// Prefetched unset (the handlers load for themselves).
type Prefetch func(ctx context.Context, items []Item) error

// HandlePrefetch registers the Prefetch hook of kind, run with the items
// of the kind each claim takes. Call it before Run.
func (w *Worker) HandlePrefetch(kind string, p Prefetch) { w.prefetch[kind] = p }

// prefetchFor runs the Prefetch hook of each kind among items with that
// kind's items, and sets what it loaded in items.
func (w *Worker) prefetchFor(ctx context.Context, items []Item) {
	if len(w.prefetch) == 0 {
		return
	}
	byKind := map[string][]int{}
	for i, it := range items {
		if w.prefetch[it.Kind] != nil {
			byKind[it.Kind] = append(byKind[it.Kind], i)
		}
	}
	for kind, idx := range byKind {
		some := make([]Item, len(idx))
		for j, i := range idx {
			some[j] = items[i]
		}
		if err := w.prefetch[kind](ctx, some); err != nil {
			if ctx.Err() == nil {
				w.logger.WarnContext(ctx, "work queue prefetch", "kind", kind, "err", err)
			}
			continue
		}
		for j, i := range idx {
			items[i].Prefetched = some[j].Prefetched
		}
	}
}
