package outbox

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/metrics"
	"github.com/bettercompute/compute/internal/tracing"
)

// DefaultBatch is how many events one RunOnce reads and hands to its sink.
const DefaultBatch = 100

// Dispatcher feeds a sink, or a group of TxSinks, from the log. Each
// dispatcher runs in its own goroutine in Run, so a slow one only delays
// itself; across processes, the holder of the lease
// singleton:outbox-dispatch:<sink id> is the only one that delivers that
// sink, and a new holder resumes at its saved cursor.
//
// No transaction is held while a Sink does its I/O: the batch is read by an
// autocommit statement, delivered, and only then is the cursor saved in a
// short transaction fenced by the lease (deliver.go). A TxSink's Apply runs
// inside that fenced transaction, which is why it must not do network I/O;
// the TxSinks of a group share the read and the transaction, each under its
// own lease and cursor (apply.go).
type Dispatcher struct {
	pool    *pgxpool.Pool
	owner   string
	id      string
	sink    Sink      // a Sink's dispatcher: its one member delivers to it
	members []*member // the sink's member, or the group's, in the order given
	logger  *slog.Logger

	// Batch bounds how many events one RunOnce reads.
	Batch int
	// RenewEvery is how often the lease is renewed while a Sink's Deliver
	// runs (real time), so that a long delivery keeps its lease; a TxSink
	// dispatcher writes its leases only this often (apply.go).
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

	mu sync.Mutex // guards the members' lease state
	// failures logs Run's failed batches once per run of them (a
	// database outage fails every poll), not once a poll.
	failures *tracing.FailureStreak
}

// member is one sink of a dispatcher with what the dispatcher knows of its
// lease and cursor. The lease state is guarded by the dispatcher's mu.
type member struct {
	id     string
	txSink TxSink // nil for a Sink

	held   *lease.Lease // the lease as last acquired, for Release on exit
	heldAt time.Time    // when it was acquired or renewed (real time)
	// cursor is the sink's cursor as the dispatcher last read or saved it
	// under held, so that a batch need not read it again: nobody else
	// moves it while the lease is held, and a holder that lost the lease
	// fails its fence before it can act on a stale one. nil: read it.
	cursor *Position
	// failing says the member's last Apply in the group failed: it runs
	// in a transaction of its own until one succeeds, so that its error
	// holds back only itself.
	failing bool
}

// NewDispatcher returns a dispatcher that delivers to sink at least once.
// owner identifies this process in the leases table (unique per process).
func NewDispatcher(pool *pgxpool.Pool, owner string, sink Sink, logger *slog.Logger) *Dispatcher {
	d := newDispatcher(pool, owner, []*member{{id: sink.ID()}}, logger)
	d.sink = sink
	return d
}

// NewTxDispatcher returns a dispatcher that applies batches to sink in the
// transaction that saves its cursor: an exactly-once effect.
func NewTxDispatcher(pool *pgxpool.Pool, owner string, sink TxSink, logger *slog.Logger) *Dispatcher {
	return NewTxGroup(pool, owner, []TxSink{sink}, logger)
}

// NewTxGroup returns a dispatcher that applies each batch to every sink of
// sinks in one transaction: one outbox read, one transaction and one
// commit for all of them, where a dispatcher each would pay those once
// per sink (a quarter of the machine under load, docs/benchmarks/history.md).
// Each sink keeps its own lease and cursor, so it is still delivered
// exactly once and can be taken over or rebuilt on its own: the group
// applies only the sinks whose leases it holds, each from its cursor. A
// sink whose Apply fails runs in a transaction of its own until it
// succeeds, so that it holds back only itself.
func NewTxGroup(pool *pgxpool.Pool, owner string, sinks []TxSink, logger *slog.Logger) *Dispatcher {
	members := make([]*member, len(sinks))
	for i, s := range sinks {
		members[i] = &member{id: s.ID(), txSink: s}
	}
	return newDispatcher(pool, owner, members, logger)
}

// newDispatcher names the dispatcher after its sinks (joined by "+") and
// adds that name to its logger once: every line it logs says "sink" once,
// as JSON with a repeated key is misread or rejected by log pipelines.
func newDispatcher(pool *pgxpool.Pool, owner string, members []*member, logger *slog.Logger) *Dispatcher {
	if logger == nil {
		logger = slog.Default()
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.id
	}
	d := &Dispatcher{
		pool: pool, owner: owner, members: members,
		Batch: DefaultBatch, RenewEvery: lease.RenewEvery,
		id: strings.Join(ids, "+"),
	}
	d.logger = logger.With("sink", d.id)
	d.failures = tracing.NewFailureStreak(d.logger, "outbox dispatch", slog.LevelError)
	return d
}

// SinkID names the sink this dispatcher feeds; a group's is its sinks'
// IDs joined by "+".
func (d *Dispatcher) SinkID() string { return d.id }

// SinkIDs names every sink this dispatcher feeds.
func (d *Dispatcher) SinkIDs() []string {
	ids := make([]string, len(d.members))
	for i, m := range d.members {
		ids[i] = m.id
	}
	return ids
}

// RunOnce reads one batch after the saved cursor and hands it to the sink,
// or applies it to the group's sinks, under their leases (see
// deliverOnce and applyOnce). It returns how many events were read and
// handled: 0 when another process holds the leases or nothing is new.
// It returns an error wrapping lease.ErrFenced when a lease was lost
// before the cursor could be saved; the batch then counts as undelivered
// and the new holder delivers it again.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	if d.sink != nil {
		return d.deliverOnce(ctx)
	}
	return d.applyOnce(ctx)
}

// Run dispatches until ctx ends: at once while a backlog remains, otherwise
// every poll interval or sooner when pokes fires (see Listener). A lost
// poke only delays. Errors are logged and retried at the next poll (a run
// of failures once as it starts, once a minute and once as it ends:
// tracing.FailureStreak). On exit
// the leases are released so another process can take over at once.
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
			d.failures.Failed(err)
		default:
			d.failures.Succeeded()
			if n == d.Batch {
				continue // more is waiting
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-pokes:
		}
	}
}

// setHeld records the lease just acquired for m (nil: none held). The
// cursor is read again under a lease acquired afresh, since another holder
// may have moved it in between; a renewal at the same epoch keeps it when
// keepCursor says so (nobody else held the lease meanwhile).
func (d *Dispatcher) setHeld(m *member, l *lease.Lease, keepCursor bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !keepCursor || l == nil || m.held == nil || m.held.Epoch != l.Epoch {
		m.cursor = nil
	}
	m.held, m.heldAt = l, time.Now()
}

// cursorOf is m's saved cursor: as this dispatcher knows it under the lease
// it holds, else read from outbox_cursors.
func (d *Dispatcher) cursorOf(ctx context.Context, q *db.Queries, m *member) (Position, error) {
	d.mu.Lock()
	known := m.cursor
	d.mu.Unlock()
	if known != nil {
		return *known, nil
	}
	cur, err := CursorOf(ctx, q, m.id)
	if err != nil {
		return Position{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if m.held != nil {
		m.cursor = &cur
	}
	return cur, nil
}

// saved records that m's cursor was saved at last under l, when l is
// still the lease held.
func (d *Dispatcher) saved(m *member, l lease.Lease, last Position) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m.held != nil && m.held.Epoch == l.Epoch && m.held.Name == l.Name {
		m.cursor = &last
	}
}

// release gives up every lease held, so that another process can take
// over at once.
func (d *Dispatcher) release(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, m := range d.members {
		d.mu.Lock()
		l := m.held
		m.held = nil
		d.mu.Unlock()
		if l == nil {
			continue
		}
		if err := l.Release(rctx, db.New(d.pool)); err != nil {
			d.logger.Warn("release outbox dispatch lease", "member", m.id, "err", err)
		}
	}
}
