// Package queries answers the read side of the API from the read models
// (the rm_* tables the projections keep) and nothing else, so reads never
// contend with the write side's locks.
//
// Read models trail the log. A query given minPosition — the position a
// command returned — first waits until every projection it reads has passed
// that position (its cursor in outbox_cursors), which gives a client
// read-your-writes. The wait is bounded (Service.WaitTimeout, 5 s by
// default); when it runs out the query fails with UNAVAILABLE (HTTP 503)
// instead of answering from a model that does not yet show the write: a
// stale answer would silently break the guarantee the client asked for,
// whereas 503 tells it to retry (with backoff) or to read without
// minPosition.
package queries

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// Defaults of the Service's tunables.
const (
	DefaultWaitTimeout  = 5 * time.Second
	DefaultPollInterval = 20 * time.Millisecond
	DefaultLimit        = 50
	MaxLimit            = 500
)

// Service runs the queries against one database, and the read-model
// queries against its read replica while the replica keeps up.
type Service struct {
	Pool *pgxpool.Pool
	// Replica, when set, serves the read-model queries (those that take
	// minPosition) while it is in rotation. The other reads (sites, pools,
	// tenants, tokens: the write model's own rows, read back right after a
	// write with no position to wait for) stay on Pool.
	Replica *Replica
	// WaitTimeout bounds a minPosition wait (default 5 s).
	WaitTimeout time.Duration
	// PollInterval is how often a minPosition wait re-reads the cursors
	// (default 20 ms, real time): projections commit their cursor with
	// their batch, so the cursor row is the one thing to watch. A
	// projection of this process wakes the waits sooner (CursorsMoved).
	PollInterval time.Duration
	// FairShareHalfLife is the half-life of the decayed usage a tenant's
	// fair share shows (default core.DefaultFairShareHalfLife): the
	// commands' setting, so that GET /v1/tenants/{tenant}/fair-share shows
	// the usage the waiting line is ranked by.
	FairShareHalfLife time.Duration

	moved wakeup
}

// CursorsMoved wakes this process's minPosition waits to read the cursors
// again now: main calls it after a projection running in the same process
// saved its cursor, so reading one's own write does not wait out the poll.
// Waits on projections of other processes still poll.
func (s *Service) CursorsMoved() { s.moved.broadcast() }

// wakeup is a broadcast: every wait that took its channel before a
// broadcast is woken by it.
type wakeup struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait is the channel the next broadcast closes.
func (w *wakeup) wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

func (w *wakeup) broadcast() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}

// New returns a Service with the default tunables.
func New(pool *pgxpool.Pool) *Service { return &Service{Pool: pool} }

func (s *Service) q() *db.Queries { return db.New(s.Pool) }

// replicaReads says whether read-model queries go to the replica now.
func (s *Service) replicaReads() bool { return s.Replica != nil && s.Replica.InRotation() }

// replicaPatience is the share of a minPosition wait spent on the replica
// before the rest goes to the primary: a standby in rotation shows a write
// within milliseconds of the primary, so one that has not within a fifth
// of the wait has stalled since its last check, and waiting it out would
// answer 503 while the primary could answer.
const replicaPatience = 5

// readModel picks the database a read-model query reads (the replica while
// it is in rotation, else the primary) and returns it once every projection
// in sinks has passed min there (waitOn). The query must read what
// readModel returned: a projection's cursor on one server says nothing of
// another's read model.
func (s *Service) readModel(ctx context.Context, min outbox.Position, sinks ...string) (*db.Queries, error) {
	timeout := s.WaitTimeout
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	start := time.Now()
	if s.replicaReads() {
		q := db.New(s.Replica.DB())
		err := s.waitOn(ctx, q, s.replicaReads, min, timeout/replicaPatience, sinks...)
		if !errors.Is(err, errLeftRotation) && !errors.Is(err, errWaitedOut) {
			return q, err
		}
		// Out of rotation, or behind, while waiting: the primary is ahead
		// of the replica, so what it shows passed min at least as soon.
	}
	q := s.q()
	return q, s.waitOn(ctx, q, nil, min, timeout-time.Since(start), sinks...)
}

// errLeftRotation ends a wait on the replica that left rotation.
var errLeftRotation = errors.New("read replica left rotation")

// errWaitedOut is in the UNAVAILABLE of a wait that ran out of time.
var errWaitedOut = errors.New("wait timed out")

// waitOn returns once every projection in sinks has passed min on q's
// server (the zero position needs no wait), or UNAVAILABLE (errWaitedOut)
// after timeout. When stay is set and says false, it gives up with
// errLeftRotation.
func (s *Service) waitOn(ctx context.Context, q *db.Queries, stay func() bool, min outbox.Position, timeout time.Duration, sinks ...string) error {
	if min.IsZero() {
		return nil
	}
	poll := s.PollInterval
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	checked := false
	for _, sink := range sinks {
		for {
			if stay != nil && !stay() {
				return errLeftRotation
			}
			moved := s.moved.wait() // before the read, so no broadcast after it is missed
			cur, err := outbox.CursorOf(ctx, q, sink)
			if err != nil {
				return pg.Translate(err, "projection cursor")
			}
			if !cur.Less(min) {
				break
			}
			if !checked { // before waiting for it: a position no transaction here ever had never comes
				if err := checkPosition(ctx, q, min, false); err != nil {
					return err
				}
				checked = true
			}
			select {
			case <-ctx.Done():
				return core.Wrap(core.CodeUnavailable, ctx.Err(), "request cancelled while waiting for the read model")
			case <-deadline.C:
				return core.Wrap(core.CodeUnavailable, errWaitedOut, fmt.Sprintf(
					"the %s read model has not reached position %s in time; retry, or read without minPosition",
					sink, min))
			case <-tick.C:
			case <-moved:
			}
		}
	}
	// Passed: an event at min, if there is one, is on q's server now.
	return checkPosition(ctx, q, min, true)
}

// checkPosition refuses a minPosition that is no event of this log:
// another installation's, or one of a write lost when the database was
// restored to an earlier point. One at or above the next transaction id
// this database will assign never comes: waiting for it would end in
// UNAVAILABLE, which tells the client to retry for ever. One below that,
// between the oldest retained event and the head, where no event sits
// (retention only deletes a prefix of the log) names a write this log
// does not have: the read model would pass it and answer without the
// write the client asked to see. One below the oldest retained event is
// taken as it is: its event may have been pruned. A hot standby's next
// id lags the primary's, and until its read models passed min it may
// not have the event yet, so there only passed applies the second rule.
func checkPosition(ctx context.Context, q *db.Queries, min outbox.Position, passed bool) error {
	rows, err := q.OutboxOldestPosition(ctx, db.OutboxOldestPositionParams{AtTxid: min.TxID, AtSeq: min.Seq})
	if err != nil {
		return pg.Translate(err, "oldest event position")
	}
	if len(rows) == 0 { // an empty log: only the first rule can say anything
		next, err := q.OutboxNextTxid(ctx)
		if err != nil {
			return pg.Translate(err, "next transaction id")
		}
		return refuseAhead(min, next.NextTxid, next.InRecovery)
	}
	r := rows[0]
	if min.Less(outbox.Position{TxID: r.Txid, Seq: r.Seq}) {
		return nil
	}
	if err := refuseAhead(min, r.NextTxid, r.InRecovery); err != nil {
		return err
	}
	if (passed || !r.InRecovery) && !r.AtEvent {
		return core.Errorf(core.CodeInvalidArgument,
			"minPosition %s is no event of this log: a write of another installation's, or one lost when the database was restored to an earlier point", min)
	}
	return nil
}

// refuseAhead is INVALID_ARGUMENT for a min at or above next, the first
// transaction id the server has not assigned, unless it is a hot standby.
func refuseAhead(min outbox.Position, next uint64, inRecovery bool) error {
	if !inRecovery && min.TxID >= next {
		return core.Errorf(core.CodeInvalidArgument,
			"minPosition %s is ahead of this event log: it is no position this installation returned", min)
	}
	return nil
}

// limitOf applies the default and the maximum to a requested page size.
func limitOf(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultLimit, nil
	case n < 0 || n > MaxLimit:
		return 0, core.Errorf(core.CodeInvalidArgument, "limit must be between 1 and %d", MaxLimit)
	}
	return n, nil
}

// requireOperator refuses fleet reads to anyone but an operator.
func requireOperator(actor core.Actor, what string) error {
	if !actor.IsOperator() {
		return core.Errorf(core.CodePermissionDenied, "reading %s requires the operator role", what)
	}
	return nil
}

// tenantFilter is the tenant a list is restricted to: the actor's own, or
// for an operator the one asked for (nil: all tenants).
func tenantFilter(actor core.Actor, asked string) *string {
	if !actor.IsOperator() {
		t := actor.Tenant
		return &t
	}
	if asked == "" {
		return nil
	}
	return &asked
}

func wrap(err error, what string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, pg.Translate(err, what))
}
