package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/tracing"
)

// deliverOnce is RunOnce for a Sink. It takes the sink's lease afresh
// every time, since a delivery cannot be undone, reads one batch after the
// saved cursor and delivers it.
func (d *Dispatcher) deliverOnce(ctx context.Context) (n int, err error) {
	start := time.Now()
	m := d.members[0]
	q := db.New(d.pool)
	l, err := lease.Acquire(ctx, q, LeaseName(m.id), d.owner, lease.TTL)
	if err != nil {
		// Only a refusal says the lease is not held. Any other error (a
		// connection lost mid-statement) may have come after the server
		// renewed it: forgetting it then would leave Run's release on exit
		// nothing to release, and the lease would outlive this process by
		// its TTL. A lease kept this way that is in fact lost fails the
		// next batch's fence.
		if errors.Is(err, lease.ErrNotAcquired) {
			d.setHeld(m, nil, false)
			return 0, nil
		}
		return 0, fmt.Errorf("dispatch %s: %w", d.id, err)
	}
	d.setHeld(m, &l, false)
	cur, err := d.cursorOf(ctx, q, m)
	if err != nil {
		return 0, fmt.Errorf("dispatch %s: %w", d.id, err)
	}
	events, err := ReadAfter(ctx, q, cur, d.Batch)
	if err != nil || len(events) == 0 {
		if err != nil {
			err = fmt.Errorf("dispatch %s: %w", d.id, err)
		}
		return 0, err
	}
	last := events[len(events)-1].Position
	ctx, span := d.startSpan(ctx, d.id, start, len(events), cur, last)
	defer func() {
		tracing.End(span, err)
		d.Metrics.SinkBatch(m.id, len(events), time.Since(start), err)
	}()
	err = d.deliver(ctx, l, events, last)
	if errors.Is(err, lease.ErrFenced) {
		d.setHeld(m, nil, false)
	}
	if err != nil {
		return 0, fmt.Errorf("dispatch %s after %s: %w", d.id, cur, err)
	}
	d.saved(m, l, last)
	if d.AfterBatch != nil {
		d.AfterBatch()
	}
	return len(events), nil
}

// startSpan starts the span of a batch for sink (for a group's, the
// sinks' IDs joined by "+"), when a Tracer is set.
func (d *Dispatcher) startSpan(ctx context.Context, sink string, start time.Time, n int, from, to Position) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, d.Tracer, "outbox.dispatch "+sink, trace.WithTimestamp(start))
	if span.IsRecording() {
		span.SetAttributes(attribute.String("compute.sink", sink), attribute.Int("compute.events", n),
			attribute.String("compute.position.from", from.String()), attribute.String("compute.position.to", to.String()))
	}
	return ctx, span
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
