package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/metrics"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/tracing"
)

// DefaultBatch is how many events one RunOnce reads and hands to its sink.
const DefaultBatch = 100

// Dispatcher feeds one sink from the log. Each sink has its own dispatcher
// (and its own goroutine in Run), so a slow sink only delays itself; across
// processes, the holder of the lease singleton:outbox-dispatch:<sink id> is
// the only one that delivers, and a new holder resumes at the saved cursor.
//
// No transaction is held while a Sink does its I/O: the batch is read by an
// autocommit statement, delivered, and only then is the cursor saved in a
// short transaction fenced by the lease. A TxSink's Apply runs inside that
// fenced transaction, which is why it must not do network I/O.
type Dispatcher struct {
	pool   *pgxpool.Pool
	owner  string
	id     string
	sink   Sink
	txSink TxSink
	logger *slog.Logger

	// Batch bounds how many events one RunOnce hands to the sink.
	Batch int
	// RenewEvery is how often the lease is renewed while a Sink's Deliver
	// runs (real time), so that a long delivery keeps its lease.
	RenewEvery time.Duration
	// AfterBatch, when set, is called after a batch was handled and its
	// cursor saved: it wakes whatever consumes what the sink wrote in the
	// same process (the webhook sink enqueues deliveries for the
	// work-queue worker) instead of leaving it to its next poll.
	AfterBatch func()
	// Tracer, when set, records a span per batch ("outbox.dispatch
	// <sink>"), the parent of what the sink does with it; nil: no spans.
	Tracer trace.Tracer
	// Metrics, when set, counts batches and events per sink.
	Metrics *metrics.Loops

	mu     sync.Mutex
	held   *lease.Lease // the lease as last acquired, for Release on exit
	heldAt time.Time    // when it was acquired or renewed (real time)
	// cursor is the sink's cursor as this dispatcher last read or saved it
	// under held, so that a batch need not read it again: nobody else
	// moves it while the lease is held, and a holder that lost the lease
	// fails its fence before it can act on a stale one. nil: read it.
	cursor *Position
}

// NewDispatcher returns a dispatcher that delivers to sink at least once.
// owner identifies this process in the leases table (unique per process).
func NewDispatcher(pool *pgxpool.Pool, owner string, sink Sink, logger *slog.Logger) *Dispatcher {
	d := newDispatcher(pool, owner, sink.ID(), logger)
	d.sink = sink
	return d
}

// NewTxDispatcher returns a dispatcher that applies batches to sink in the
// transaction that saves its cursor: an exactly-once effect.
func NewTxDispatcher(pool *pgxpool.Pool, owner string, sink TxSink, logger *slog.Logger) *Dispatcher {
	d := newDispatcher(pool, owner, sink.ID(), logger)
	d.txSink = sink
	return d
}

func newDispatcher(pool *pgxpool.Pool, owner, id string, logger *slog.Logger) *Dispatcher {
	if logger == nil {
		logger = slog.Default()
	}
	return &Dispatcher{
		pool: pool, owner: owner, id: id, logger: logger.With("sink", id),
		Batch: DefaultBatch, RenewEvery: lease.RenewEvery,
	}
}

// SinkID names the sink this dispatcher feeds.
func (d *Dispatcher) SinkID() string { return d.id }

// RunOnce takes the sink's lease (or, for a TxSink, reuses the one it holds
// until RenewEvery has passed: see takeLease), reads one batch after the
// saved cursor and hands it to the sink. It returns how many events were
// handled and saved: 0 when another process holds the lease or nothing is
// new.
// It returns an error wrapping lease.ErrFenced when the lease was lost
// before the cursor could be saved; the batch then counts as undelivered
// and the new holder delivers it again.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	n, reused, err := d.runOnce(ctx)
	if errors.Is(err, lease.ErrFenced) && reused {
		// The lease this process reused had lapsed by the database's clock
		// (or was taken over and given back): the fenced transaction wrote
		// nothing, so take the lease afresh and read the batch again.
		n, _, err = d.runOnce(ctx)
	}
	return n, err
}

// runOnce is one RunOnce attempt; reused says whether it ran on a lease
// held from an earlier one.
func (d *Dispatcher) runOnce(ctx context.Context) (n int, reused bool, err error) {
	start := time.Now()
	q := db.New(d.pool)
	l, fresh, err := d.takeLease(ctx, q)
	reused = !fresh
	if errors.Is(err, lease.ErrNotAcquired) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("dispatch %s: %w", d.id, err)
	}
	cur, err := d.cursorOf(ctx, q)
	if err != nil {
		return 0, reused, fmt.Errorf("dispatch %s: %w", d.id, err)
	}
	events, err := ReadAfter(ctx, q, cur, d.Batch)
	if err != nil || len(events) == 0 {
		if err != nil {
			err = fmt.Errorf("dispatch %s: %w", d.id, err)
		}
		return 0, reused, err
	}
	last := events[len(events)-1].Position
	ctx, span := tracing.Start(ctx, d.Tracer, "outbox.dispatch "+d.id, trace.WithTimestamp(start))
	if span.IsRecording() {
		span.SetAttributes(attribute.String("compute.sink", d.id), attribute.Int("compute.events", len(events)),
			attribute.String("compute.position.from", cur.String()), attribute.String("compute.position.to", last.String()))
	}
	defer func() {
		tracing.End(span, err)
		d.Metrics.SinkBatch(d.id, len(events), time.Since(start), err)
	}()
	if d.txSink != nil {
		err = d.apply(ctx, l, events, last)
	} else {
		err = d.deliver(ctx, l, events, last)
	}
	if errors.Is(err, lease.ErrFenced) {
		d.setHeld(nil)
	}
	if err != nil {
		return 0, reused, fmt.Errorf("dispatch %s after %s: %w", d.id, cur, err)
	}
	d.saved(l, last)
	if d.AfterBatch != nil {
		d.AfterBatch()
	}
	return len(events), reused, nil
}

// takeLease is the sink's lease for this RunOnce. A TxSink's dispatcher
// renews it only every RenewEvery and otherwise reuses the one it holds:
// its transaction's fence, not this process's memory, decides whether the
// lease is still held, and a lease that lapsed by the database's clock
// fails the fence (RunOnce then tries once more on a fresh one). A Sink's
// dispatcher takes it afresh every time, since its delivery cannot be
// undone. fresh says whether it was just acquired.
func (d *Dispatcher) takeLease(ctx context.Context, q *db.Queries) (l lease.Lease, fresh bool, err error) {
	d.mu.Lock()
	held, at := d.held, d.heldAt
	d.mu.Unlock()
	if d.txSink != nil && held != nil && time.Since(at) < d.RenewEvery {
		return *held, false, nil
	}
	l, err = lease.Acquire(ctx, q, LeaseName(d.id), d.owner, lease.TTL)
	if err != nil {
		// Only a refusal says the lease is not held. Any other error (a
		// connection lost mid-statement) may have come after the server
		// renewed it: forgetting it then would leave Run's release on exit
		// nothing to release, and the lease would outlive this process by
		// its TTL. A lease kept this way that is in fact lost fails the
		// next batch's fence.
		if errors.Is(err, lease.ErrNotAcquired) {
			d.setHeld(nil)
		}
		return l, false, err
	}
	d.setHeld(&l)
	return l, true, nil
}

// apply runs the TxSink's batch and the cursor save in one fenced
// transaction: both happen or neither does. The fence goes with the BEGIN,
// the COMMIT with the cursor save.
//
// The transaction commits without waiting for its WAL to reach the disk
// (synchronous_commit off, for it alone). A TxSink's effects are derived
// from the log and saved with the cursor they follow from, so a crash that
// loses the last such commits loses both together, and the next holder
// applies those events again from the durable outbox: nothing is lost or
// applied twice, and no acknowledgement anyone relies on is given for
// them. Not waiting for the flush saves the sinks' share of the machine
// (3 % more reservations/s over HTTP, docs/benchmarks.md).
func (d *Dispatcher) apply(ctx context.Context, l lease.Lease, events []Stored, last Position) error {
	var held bool
	return pg.InTxBatch(ctx, d.pool, func(b *pg.Batch) {
		b.Statement("SET LOCAL synchronous_commit = off")
		l.FenceIn(ctx, b, &held)
	}, func(tx pgx.Tx) error {
		if !held {
			return lease.ErrFenced
		}
		if err := d.txSink.Apply(ctx, tx, events); err != nil {
			return fmt.Errorf("apply %d events: %w", len(events), err)
		}
		var b pg.Batch
		queueCursorSave(ctx, &b, d.id, last)
		b.Commit()
		if err := b.Send(ctx, tx); err != nil {
			return fmt.Errorf("save cursor of sink %s at %s: %w", d.id, last, err)
		}
		return nil
	})
}

// deliver hands the batch to the Sink outside any transaction, renewing the
// lease meanwhile, then saves the cursor in a short fenced transaction. A
// zombie whose lease was taken over during delivery fails the fence and
// saves nothing.
func (d *Dispatcher) deliver(ctx context.Context, l lease.Lease, events []Stored, last Position) error {
	if err := d.deliverKeepingLease(ctx, l, events); err != nil {
		return fmt.Errorf("deliver %d events: %w", len(events), err)
	}
	// One round trip with the BEGIN, then the COMMIT: the save runs
	// whatever the fence found, and is rolled back when it found the lease
	// gone.
	var held bool
	return pg.InTxBatch(ctx, d.pool, func(b *pg.Batch) {
		l.FenceIn(ctx, b, &held)
		queueCursorSave(ctx, b, d.id, last)
	}, func(pgx.Tx) error {
		if !held {
			return lease.ErrFenced
		}
		return nil
	})
}

// deliverKeepingLease calls Deliver while a helper goroutine renews the
// lease every RenewEvery. When renewal finds the lease taken over, Deliver's
// context is cancelled with lease.ErrFenced: its work would be delivered
// again by the new holder anyway.
func (d *Dispatcher) deliverKeepingLease(ctx context.Context, l lease.Lease, events []Stored) error {
	dctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(d.RenewEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			_, err := lease.Acquire(dctx, db.New(d.pool), l.Name, l.Owner, lease.TTL)
			switch {
			case errors.Is(err, lease.ErrNotAcquired):
				cancel(lease.ErrFenced)
				return
			case err != nil && dctx.Err() == nil:
				d.logger.Warn("renew outbox dispatch lease", "err", err)
			}
		}
	})
	err := d.sink.Deliver(dctx, events)
	close(stop)
	wg.Wait()
	if cause := context.Cause(dctx); errors.Is(cause, lease.ErrFenced) {
		return fmt.Errorf("%w (during delivery: %v)", lease.ErrFenced, err)
	}
	return err
}

// Run dispatches until ctx ends: at once while a backlog remains, otherwise
// every poll interval or sooner when pokes fires (see Listener). A lost
// poke only delays. Errors are logged and retried at the next poll. On exit
// the lease is released so another process can take over at once.
func (d *Dispatcher) Run(ctx context.Context, poll time.Duration, pokes <-chan struct{}) {
	defer d.release(ctx)
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		n, err := d.RunOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case errors.Is(err, lease.ErrFenced):
			d.logger.Warn("outbox dispatch lease lost; batch left for the new holder", "err", err)
		case err != nil:
			d.logger.Error("outbox dispatch", "err", err)
		case n == d.Batch:
			continue // more is waiting
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-pokes:
		}
	}
}

// setHeld records the lease just acquired (nil: none held). The cursor is
// read again under a lease acquired afresh: another holder may have moved
// it in between.
func (d *Dispatcher) setHeld(l *lease.Lease) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.held, d.heldAt, d.cursor = l, time.Now(), nil
}

// cursorOf is the sink's saved cursor: as this dispatcher knows it under
// the lease it holds, else read from outbox_cursors.
func (d *Dispatcher) cursorOf(ctx context.Context, q *db.Queries) (Position, error) {
	d.mu.Lock()
	known := d.cursor
	d.mu.Unlock()
	if known != nil {
		return *known, nil
	}
	cur, err := CursorOf(ctx, q, d.id)
	if err != nil {
		return Position{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held != nil {
		d.cursor = &cur
	}
	return cur, nil
}

// saved records that the cursor was saved at last under l, when l is still
// the lease held.
func (d *Dispatcher) saved(l lease.Lease, last Position) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held != nil && d.held.Epoch == l.Epoch && d.held.Name == l.Name {
		d.cursor = &last
	}
}

func (d *Dispatcher) release(ctx context.Context) {
	d.mu.Lock()
	l := d.held
	d.held = nil
	d.mu.Unlock()
	if l == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := l.Release(rctx, db.New(d.pool)); err != nil {
		d.logger.Warn("release outbox dispatch lease", "err", err)
	}
}
