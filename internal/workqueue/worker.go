package workqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/metrics"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/tracing"
)

// Item is one claimed row, handed to its handler.
type Item struct {
	Kind     string
	Key      string
	Gen      int64
	Attempts int32
	// Lease is the shard lease the item was claimed under. Handlers that
	// write start their transaction with Lease.Fence, so a worker whose
	// shard was taken over cannot act.
	Lease lease.Lease
	// Prefetched is what the kind's Prefetch hook loaded for this item
	// with the rest of its claim, or nil: the handler's to interpret, and
	// to load itself when it is nil.
	Prefetched any
}

// Handler runs one item. A nil error completes it; Again asks to run it
// again later without counting a failure; Completed says the handler
// completed the item itself (CompleteIn); any other error is retried with
// back-off.
type Handler func(ctx context.Context, it Item) error

type againError struct{ after time.Duration }

func (e againError) Error() string { return fmt.Sprintf("run again after %s", e.after) }

// Again is what a handler returns to be run again after d, for example a
// pending reservation retried every 30 seconds.
func Again(d time.Duration) error { return againError{after: d} }

// Backoff returns the delay before the next attempt after attempts failures.
type Backoff func(attempts int32) time.Duration

// DefaultBackoff doubles from one second up to five minutes.
func DefaultBackoff(attempts int32) time.Duration {
	d := time.Second
	for i := int32(1); i < attempts && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// Worker claims and runs work_queue rows of the shards it holds.
type Worker struct {
	pool     *pgxpool.Pool
	owner    string
	clock    *clock.Clock
	logger   *slog.Logger
	handlers map[string]Handler
	prefetch map[string]Prefetch
	backoff  Backoff
	// ClaimTTL is how long a claim protects a row from other workers.
	ClaimTTL time.Duration
	// Batch bounds how many rows one claim takes.
	Batch int32
	// Concurrency bounds how many claimed items run at once.
	Concurrency int
	// RenewEvery is how often, while items run, the worker renews the
	// shard leases it holds and extends the claims of its running items:
	// a batch or an item that outlasts lease.TTL keeps its shards, and one
	// that outlasts ClaimTTL is not claimed a second time by this worker.
	// Zero means lease.RenewEvery.
	RenewEvery time.Duration
	// Tracer, when set, records a span per item ("workqueue <kind>"), the
	// parent of what its handler does; nil: no spans.
	Tracer trace.Tracer
	// Metrics, when set, counts items per kind and outcome.
	Metrics *metrics.Loops

	// mu guards held, claimable, renewedAt and running, which the
	// claiming loop and the lease keeper (keepLeases) share.
	mu sync.Mutex
	// held are the shard leases as last renewed, draining ones included;
	// claimable are those the worker keeps (its share), which claims
	// reuse for up to reuseLeasesFor after renewedAt.
	held, claimable map[int32]lease.Lease
	renewedAt       time.Time
	// use counts the items running under each shard, in this worker and
	// the pools that share its leases (ShareLeasesWith).
	use *shardUse
	// running counts the items of each kind and key running now, whose
	// claims the lease keeper extends.
	running map[runKey]int
	// soon, set by Run, wakes its loop when an item that asked to run
	// again after a short while comes due.
	soon func(after time.Duration)
	// claimFailures logs Run's failed claims once per run of them (a
	// database outage fails every poll), not once a poll.
	claimFailures *tracing.FailureStreak
}

// reuseLeasesFor is how long Run's claims reuse the shard leases of the
// last renewal (taking free shards) before renewing them again. RunOnce
// renews on every call; while items run, the lease keeper renews every
// RenewEvery. A claim under a lease that lapsed meanwhile finds nothing
// (WorkQueueClaim checks the lease).
const reuseLeasesFor = time.Second

// wakeForAgainWithin bounds the Again delays that Run sets a timer for;
// later ones are found by the poll.
const wakeForAgainWithin = 10 * time.Second

// NewWorker returns a worker identified by owner (unique per process) that
// anchors clk at every shard lease renewal.
func NewWorker(pool *pgxpool.Pool, owner string, clk *clock.Clock, logger *slog.Logger) *Worker {
	if logger == nil {
		logger = slog.Default()
	}
	return &Worker{
		pool: pool, owner: owner, clock: clk, logger: logger,
		handlers: map[string]Handler{}, prefetch: map[string]Prefetch{}, backoff: DefaultBackoff,
		ClaimTTL: time.Minute, Batch: 32, Concurrency: 8, RenewEvery: lease.RenewEvery,
		running:       map[runKey]int{},
		use:           newShardUse(),
		claimFailures: tracing.NewFailureStreak(logger, "work queue", slog.LevelError),
	}
}

// Handle registers the handler for kind. Call it before Run.
func (w *Worker) Handle(kind string, h Handler) { w.handlers[kind] = h }

// RunOnce renews the worker's shard leases (taking free ones), claims the
// due rows of those shards and runs them, Concurrency at a time, renewing
// the leases every RenewEvery while they run. It returns how many items
// ran, once all of them have.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	items, err := w.claim(ctx, w.Batch, true)
	if err != nil || len(items) == 0 {
		return 0, err
	}
	stop := w.keepLeases(ctx)
	defer stop()
	w.prefetchFor(ctx, items[:min(len(items), max(w.Concurrency, 1))]) // those start at once
	// Items run side by side, so one slow item (a webhook endpoint that
	// hangs until its timeout) does not hold up the others of the batch.
	sem := make(chan struct{}, max(w.Concurrency, 1))
	errs := make(chan error, len(items))
	var wg sync.WaitGroup
	for _, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs <- w.run(ctx, it)
		}()
	}
	wg.Wait()
	close(errs)
	var first error
	for err := range errs {
		if first == nil {
			first = err
		}
	}
	return len(items), first
}

// claim claims up to n due rows of the shards the worker keeps (not those
// it drains), of the kinds this worker handles. It balances the shard
// leases first (renewShards: its share, taking free ones), when renew is
// set or the last renewal is reuseLeasesFor old. Each item claimed counts
// as running (begin) from then on, until its run ends.
func (w *Worker) claim(ctx context.Context, n int32, renew bool) ([]Item, error) {
	q := db.New(w.pool)
	w.mu.Lock()
	shards, renewedAt := w.claimable, w.renewedAt
	w.mu.Unlock()
	if renew || shards == nil || time.Since(renewedAt) >= reuseLeasesFor {
		var err error
		if shards, err = w.renewShards(ctx, q, true); err != nil {
			return nil, err
		}
	}
	if len(shards) == 0 {
		return nil, nil
	}
	ids := make([]int32, 0, len(shards))
	for id := range shards {
		ids = append(ids, id)
	}
	kinds := make([]string, 0, len(w.handlers))
	for k := range w.handlers {
		kinds = append(kinds, k)
	}
	// No balance of the process's pools runs between the claim and the
	// items' begin: it would not see them busy and could give their shard
	// up (seen under two real processes: a pool's balance gave a shard up
	// 3 ms after the other pool claimed in it, fencing two items away).
	w.use.gate.RLock()
	defer w.use.gate.RUnlock()
	rows, err := q.WorkQueueClaim(ctx, db.WorkQueueClaimParams{
		ClaimSeconds: w.ClaimTTL.Seconds(), Claimer: w.owner, Shards: ids, Kinds: kinds, MaxRows: n,
	})
	if err != nil {
		return nil, fmt.Errorf("claim work: %w", err)
	}
	items := make([]Item, 0, len(rows))
	for _, r := range rows {
		it := Item{Kind: r.Kind, Key: r.Key, Gen: r.Gen, Attempts: r.Attempts, Lease: shards[r.Shard]}
		w.begin(it) // run ends it
		items = append(items, it)
	}
	return items, nil
}

// run executes one item and records its outcome in a transaction fenced by
// the shard lease, so a worker that lost the shard cannot complete or
// reschedule a row another worker now owns.
func (w *Worker) run(ctx context.Context, it Item) (err error) {
	defer w.end(it) // claim began it
	start := time.Now()
	ctx, span := tracing.Start(ctx, w.Tracer, "workqueue "+it.Kind)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("compute.work.kind", it.Kind), attribute.String("compute.work.key", it.Key),
			attribute.Int64("compute.work.gen", it.Gen), attribute.Int("compute.work.attempts", int(it.Attempts)))
	}
	var herr error
	fenced := false
	defer func() {
		outcome, failure := outcomeOf(herr, fenced, err)
		if span.IsRecording() {
			span.SetAttributes(attribute.String("compute.work.outcome", outcome))
		}
		tracing.End(span, failure)
		w.Metrics.WorkItem(it.Kind, outcome, time.Since(start))
	}()
	herr = w.handlers[it.Kind](ctx, it)
	if errors.Is(herr, Completed) {
		herr = nil // its own fenced transaction completed it
		return nil
	}
	again, isAgain := AgainAfter(herr)
	err = pg.InTx(ctx, w.pool, func(tx pgx.Tx) error {
		if err := it.Lease.Fence(ctx, tx); err != nil {
			return err
		}
		q := db.New(tx)
		switch {
		case herr == nil:
			n, err := q.WorkQueueComplete(ctx, db.WorkQueueCompleteParams{Kind: it.Kind, Key: it.Key, Gen: it.Gen})
			if err != nil || n == 1 {
				return err
			}
			_, err = q.WorkQueueUnclaim(ctx, db.WorkQueueUnclaimParams{Kind: it.Kind, Key: it.Key})
			return err
		case isAgain:
			_, err := q.WorkQueueReschedule(ctx, db.WorkQueueRescheduleParams{Kind: it.Kind, Key: it.Key, Gen: it.Gen,
				DelaySeconds: again.Seconds()})
			if err == nil && w.soon != nil {
				w.soon(again)
			}
			return err
		default:
			msg := herr.Error()
			w.logger.WarnContext(ctx, "work item failed", "kind", it.Kind, "key", it.Key, "attempts", it.Attempts, "err", msg)
			_, err := q.WorkQueueReschedule(ctx, db.WorkQueueRescheduleParams{
				Kind: it.Kind, Key: it.Key, Gen: it.Gen, DelaySeconds: w.backoff(it.Attempts).Seconds(), LastError: &msg,
			})
			return err
		}
	})
	if errors.Is(err, lease.ErrFenced) {
		w.logger.WarnContext(ctx, "shard lease lost during work item", "kind", it.Kind, "key", it.Key)
		fenced = true // the new holder of the shard runs the item again
		return nil
	}
	if err != nil {
		return fmt.Errorf("record work %s %s: %w", it.Kind, it.Key, err)
	}
	return nil
}

// outcomeOf names how a run ended, for the metrics and the span, and the
// error that failed it (nil when nothing did): herr is the handler's
// error, fenced whether the shard lease was lost before the outcome was
// recorded, err the recording's error.
func outcomeOf(herr error, fenced bool, err error) (string, error) {
	switch {
	case err != nil:
		return metrics.OutcomeError, err
	case fenced:
		return metrics.OutcomeFenced, lease.ErrFenced
	case herr == nil:
		return metrics.OutcomeDone, nil
	case IsAgain(herr):
		return metrics.OutcomeAgain, nil
	}
	return metrics.OutcomeFailed, herr
}

// Run keeps up to Concurrency items running until ctx ends, then waits for
// the running ones. It claims only as many rows as it has free slots, and
// claims again as soon as a slot frees while more rows may be due, so one
// slow item (a webhook endpoint hanging until its timeout) holds one slot,
// never a whole batch. It also claims at every poll interval, when poke
// fires (a lost poke only delays) and when an item it put back for a short
// while (Again) comes due. It renews the shard leases at its claims, and
// every RenewEvery while items run, even while every slot is busy and no
// claim is made. Errors are logged, never fatal; failed claims once as they
// start failing, once a minute while they go on and once when a claim
// succeeds again (tracing.FailureStreak).
func (w *Worker) Run(ctx context.Context, poll time.Duration, poke <-chan struct{}) {
	t := time.NewTicker(poll)
	defer t.Stop()
	stop := w.keepLeases(ctx)
	defer stop() // after the running items are done (deferred below)
	slots := make(chan struct{}, max(w.Concurrency, 1))
	freed := make(chan struct{}, 1)
	// An item put back for a short while (a webhook delivery waiting for
	// a slot) wakes the loop when it comes due, so that it neither waits
	// for the next poll nor comes back in one burst with every other item
	// due by then.
	due := make(chan struct{}, 1)
	w.soon = func(after time.Duration) {
		if after <= wakeForAgainWithin {
			time.AfterFunc(after, func() {
				select {
				case due <- struct{}{}:
				default: // a wake-up is already pending
				}
			})
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	// more: the last claim filled what it asked for, so more rows may be
	// due; a freed slot is then worth a claim before the next poll.
	more := true
	for {
		if free := cap(slots) - len(slots); free > 0 {
			want := min(int(w.Batch), free)
			items, err := w.claim(ctx, int32(want), false)
			switch {
			case err == nil:
				w.claimFailures.Succeeded()
			case ctx.Err() == nil:
				w.claimFailures.Failed(err)
			}
			w.prefetchFor(ctx, items) // no more than the free slots: all start at once
			for _, it := range items {
				slots <- struct{}{}
				wg.Add(1)
				go func() {
					defer func() {
						<-slots
						wg.Done()
						select {
						case freed <- struct{}{}:
						default: // a wake-up is already pending
						}
					}()
					if err := w.run(ctx, it); err != nil && ctx.Err() == nil {
						w.logger.Error("work queue", "err", err)
					}
				}()
			}
			more = err == nil && len(items) == want
			if more && len(slots) < cap(slots) {
				// Without this one worker delivered at most Batch
				// webhooks per poll interval however many were due.
				continue
			}
		}
		var onFreed <-chan struct{}
		if more {
			onFreed = freed
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-poke:
		case <-due:
		case <-onFreed:
		}
	}
}

// Kinds lists the registered kinds, for logs.
func (w *Worker) Kinds() []string {
	out := make([]string, 0, len(w.handlers))
	for k := range w.handlers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
