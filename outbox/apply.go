package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/tracing"
)

// part is a member whose lease is held, with that lease and its cursor.
type part struct {
	m   *member
	l   lease.Lease
	cur Position
}

// run is the members applied in one transaction, all at the same cursor.
// upTo, when set, caps the batch: a member behind the others catches up to
// their cursor alone, then joins them.
type run struct {
	parts []part
	upTo  *Position
}

// applyOnce is RunOnce for TxSinks. The members at the furthest cursor
// read one batch and apply it in one transaction; a member behind them,
// or whose Apply failed in that transaction, runs alone (see plan).
// Between renewals every RenewEvery the leases held are reused without a
// write: each transaction's fence, not this process's memory, decides
// whether a lease is still held, and a lease that lapsed by the
// database's clock fails the fence; applyOnce then takes the leases
// afresh and tries once more.
func (d *Dispatcher) applyOnce(ctx context.Context) (int, error) {
	n, reused, err := d.applyRuns(ctx, false)
	if errors.Is(err, lease.ErrFenced) && reused {
		// The fenced transaction wrote nothing: take the leases afresh and
		// read again.
		m, _, err := d.applyRuns(ctx, true)
		return max(n, m), err
	}
	return n, err
}

// applyRuns takes or reuses the leases and applies one batch to every run
// of the plan. n is the largest batch; reused says whether the leases
// were held from an earlier call.
func (d *Dispatcher) applyRuns(ctx context.Context, force bool) (n int, reused bool, err error) {
	fresh, err := d.takeLeases(ctx, force)
	if err != nil {
		return 0, false, fmt.Errorf("dispatch %s: %w", d.id, err)
	}
	parts, err := d.heldParts(ctx)
	if err != nil {
		return 0, !fresh, fmt.Errorf("dispatch %s: %w", d.id, err)
	}
	for _, r := range d.plan(parts) {
		rn, rerr := d.applyRun(ctx, r)
		n, err = max(n, rn), errors.Join(err, rerr)
	}
	return n, !fresh, err
}

// takeLeases acquires every member's lease in one statement, or renews
// those held, when one is not held or RenewEvery has passed since it was
// (or when force says so); otherwise it reuses them. A member whose lease
// another process holds is simply not applied. An error other than that
// refusal keeps what was held (see deliverOnce). fresh says whether the
// leases were just written.
func (d *Dispatcher) takeLeases(ctx context.Context, force bool) (fresh bool, err error) {
	d.mu.Lock()
	due := force
	for _, m := range d.members {
		if m.held == nil || time.Since(m.heldAt) >= d.RenewEvery {
			due = true
		}
	}
	d.mu.Unlock()
	if !due {
		return false, nil
	}
	names := make([]string, len(d.members))
	for i, m := range d.members {
		names[i] = LeaseName(m.id)
	}
	held, err := lease.AcquireMany(ctx, db.New(d.pool), names, d.owner, lease.TTL)
	if err != nil {
		return false, err
	}
	byName := make(map[string]lease.Lease, len(held))
	for _, l := range held {
		byName[l.Name] = l
	}
	for _, m := range d.members {
		if l, ok := byName[LeaseName(m.id)]; ok {
			d.setHeld(m, &l, true)
		} else {
			d.setHeld(m, nil, false)
		}
	}
	return true, nil
}

// heldParts is every member whose lease is held, with its cursor.
func (d *Dispatcher) heldParts(ctx context.Context) ([]part, error) {
	var parts []part
	q := db.New(d.pool)
	for _, m := range d.members {
		d.mu.Lock()
		l := m.held
		d.mu.Unlock()
		if l == nil {
			continue
		}
		cur, err := d.cursorOf(ctx, q, m)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part{m: m, l: *l, cur: cur})
	}
	return parts, nil
}

// plan splits parts into runs: the members at the furthest cursor
// together, and every other one alone, a member behind capped at that
// cursor so that it joins them once it reaches it. A failing member runs
// alone wherever it is, so that its error holds back only itself.
func (d *Dispatcher) plan(parts []part) []run {
	d.mu.Lock()
	defer d.mu.Unlock()
	var lead Position
	for _, p := range parts {
		if !p.m.failing && lead.Less(p.cur) {
			lead = p.cur
		}
	}
	var together run
	var runs []run
	for _, p := range parts {
		switch {
		case !p.m.failing && p.cur == lead:
			together.parts = append(together.parts, p)
		case p.cur.Less(lead):
			runs = append(runs, run{parts: []part{p}, upTo: &lead})
		default:
			runs = append(runs, run{parts: []part{p}})
		}
	}
	if len(together.parts) > 0 {
		runs = append([]run{together}, runs...)
	}
	return runs
}

// applyRun reads one batch after the run's cursor and applies it to the
// run's members in one fenced transaction with their cursor saves.
func (d *Dispatcher) applyRun(ctx context.Context, r run) (n int, err error) {
	start := time.Now()
	from := r.parts[0].cur
	events, err := ReadAfter(ctx, db.New(d.pool), from, d.Batch)
	if err != nil {
		return 0, fmt.Errorf("dispatch %s: %w", d.id, err)
	}
	if r.upTo != nil {
		events = upTo(events, *r.upTo)
	}
	if len(events) == 0 {
		return 0, nil
	}
	last := events[len(events)-1].Position
	ids := make([]string, len(r.parts))
	for i, p := range r.parts {
		ids[i] = p.m.id
	}
	ctx, span := d.startSpan(ctx, strings.Join(ids, "+"), start, len(events), from, last)
	defer func() {
		tracing.End(span, err)
		for _, p := range r.parts {
			d.Metrics.SinkBatch(p.m.id, len(events), time.Since(start), err)
		}
	}()
	err = d.apply(ctx, r.parts, events, last)
	d.settle(r.parts, last, err)
	if err != nil {
		return 0, fmt.Errorf("dispatch %s after %s: %w", strings.Join(ids, "+"), from, err)
	}
	if d.AfterBatch != nil {
		d.AfterBatch()
	}
	return len(events), nil
}

// upTo is events up to and including p.
func upTo(events []Stored, p Position) []Stored {
	for i, e := range events {
		if p.Less(e.Position) {
			return events[:i]
		}
	}
	return events
}

// fencedError names the members whose leases a transaction's fence found
// lost.
type fencedError struct{ lost []*member }

func (e *fencedError) Error() string {
	ids := make([]string, len(e.lost))
	for i, m := range e.lost {
		ids[i] = m.id
	}
	return fmt.Sprintf("%v: %s", lease.ErrFenced, strings.Join(ids, ", "))
}

func (e *fencedError) Unwrap() error { return lease.ErrFenced }

// applyError is a member's Apply failing.
type applyError struct {
	m   *member
	err error
}

func (e *applyError) Error() string { return fmt.Sprintf("apply sink %s: %v", e.m.id, e.err) }
func (e *applyError) Unwrap() error { return e.err }

// apply runs the members' Apply of one batch and their cursor saves in one
// fenced transaction: all of it happens or none does. The fences go with
// the BEGIN, the COMMIT with the cursor saves. They lock the lease rows in
// name order, the order in which lease.AcquireMany locks them: a group
// fencing its leases while another process's group tries to take them
// then waits instead of deadlocking.
//
// The transaction commits without waiting for its WAL to reach the disk
// (synchronous_commit off, for it alone). A TxSink's effects are derived
// from the log and saved with the cursor they follow from, so a crash that
// loses the last such commits loses both together, and the next holder
// applies those events again from the durable outbox: nothing is lost or
// applied twice, and no acknowledgement anyone relies on is given for
// them. Not waiting for the flush saves the sinks' share of the machine
// (3 % more reservations/s over HTTP, docs/benchmarks/history.md).
func (d *Dispatcher) apply(ctx context.Context, parts []part, events []Stored, last Position) error {
	held := make([]bool, len(parts))
	return pg.InTxBatch(ctx, d.pool, func(b *pg.Batch) {
		b.Statement("SET LOCAL synchronous_commit = off")
		for _, i := range byLeaseName(parts) {
			parts[i].l.FenceIn(ctx, b, &held[i])
		}
	}, func(tx pgx.Tx) error {
		var lost []*member
		for i, p := range parts {
			if !held[i] {
				lost = append(lost, p.m)
			}
		}
		if len(lost) > 0 {
			return &fencedError{lost: lost}
		}
		var b pg.Batch
		for _, p := range parts {
			if err := p.m.txSink.Apply(ctx, tx, events); err != nil {
				return &applyError{m: p.m, err: fmt.Errorf("%d events: %w", len(events), err)}
			}
			queueCursorSave(ctx, &b, p.m.id, last)
		}
		b.Commit()
		if err := b.Send(ctx, tx); err != nil {
			return fmt.Errorf("save cursors at %s: %w", last, err)
		}
		return nil
	})
}

// byLeaseName is the indexes of parts in the order of their lease names.
func byLeaseName(parts []part) []int {
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(parts[a].l.Name, parts[b].l.Name) })
	return order
}

// settle records what a run's transaction did: on success each member's
// cursor, now at last, and its return to the group; a lost lease
// forgotten; a member's failed Apply marked, so that it runs alone
// next time (in a group of more than one).
func (d *Dispatcher) settle(parts []part, last Position, err error) {
	var fe *fencedError
	var ae *applyError
	switch {
	case err == nil:
		for _, p := range parts {
			d.saved(p.m, p.l, last)
		}
		d.mu.Lock()
		for _, p := range parts {
			p.m.failing = false
		}
		d.mu.Unlock()
	case errors.As(err, &fe):
		for _, m := range fe.lost {
			d.setHeld(m, nil, false)
		}
	case errors.As(err, &ae) && len(d.members) > 1:
		d.mu.Lock()
		ae.m.failing = true
		d.mu.Unlock()
	}
}
