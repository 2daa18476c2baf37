package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
)

// The waiting line of a pool or a site (docs/concepts/fair-share.md). A
// reservation that cannot be placed is pending; the pending reservations of
// one scope (the pool, or the site, that the reservation names) wait in one
// line, the reservation.queue work item keyed by the scope. Each run of it
// ranks the scope's pending reservations in fair-share order, records where
// each stands, and tries them in that order. Before the line, every pending
// reservation had its own reservation.place item, retried every 30 s in no
// particular order, so a tenant that flooded the queue starved the others.
//
// Best effort, like Kueue's BestEffortFIFO: a reservation that does not fit
// now does not hold back those behind it, which are tried in turn. A large
// request may therefore wait while smaller ones behind it take what frees;
// the order decides who gets capacity first when several fit, never that
// capacity stays idle.
const (
	// DefaultPendingQueueBatch is the default of Config.PendingQueueBatch,
	// the reservations one run tries: each try is a placement, with its
	// own transaction. When more wait, the run takes each tenant's first
	// in the line, then each tenant's second, and so on
	// (PendingQueueRank), so that one tenant's flood of reservations that
	// never fit cannot keep every other tenant's from being tried.
	DefaultPendingQueueBatch = 256

	poolScope = "pool:"
	siteScope = "site:"
)

// PendingQueueKey is the key of the reservation.queue item of the
// reservations that name pool poolID, or, when poolID is empty, site
// siteID: core.QueueScope. (ReservationResyncMissing in
// sql/queries/reservation_resync.sql spells the same keys in SQL.)
func PendingQueueKey(poolID, siteID string) string { return core.QueueScope(poolID, siteID) }

// pendingQueueScope is the pool or the site a queue key names (the other
// nil), and whether the key is one.
func pendingQueueScope(key string) (poolID, siteID *string, ok bool) {
	if id, found := strings.CutPrefix(key, poolScope); found && id != "" {
		return &id, nil, true
	}
	if id, found := strings.CutPrefix(key, siteScope); found && id != "" {
		return nil, &id, true
	}
	return nil, nil, false
}

// ReservationQueue is the KindReservationQueue work-queue handler: one run
// of the scope's line, fenced by the item's shard lease. It runs again
// after the pending retry interval while any reservation of the scope
// still waits, and is done when none does.
func (r Reconcilers) ReservationQueue(ctx context.Context, it workqueue.Item) error {
	run, err := r.h.runPendingQueue(ctx, it.Key, fenceOf(ctx, it))
	if err != nil {
		return err
	}
	if run.again > 0 {
		return workqueue.Again(run.again)
	}
	return nil
}

// pendingQueueRun is what one run of a scope's line did.
type pendingQueueRun struct {
	// tried are the reservations tried, in the order tried (the line's
	// order); left those of them no longer pending afterwards (booked, or
	// ended meanwhile), failed those whose try failed with an error.
	tried, left []string
	failed      int
	// again is when the line should run next: 0 when nobody waits.
	again time.Duration
}

// runPendingQueue runs the line of the scope key names. A scope runs at
// most once per pending retry interval: a wake-up that comes sooner (a
// reservation that became pending during a run, an old reservation.place
// item) is put off until then, since every reservation in the line was
// tried at the last run or by its own create. Then, in one transaction,
// the line is ranked and the positions written (PendingQueueRank); each
// reservation is then tried through retryPending in its own transaction,
// in the line's order, and the positions of those that left the line go.
func (h *Handlers) runPendingQueue(ctx context.Context, key string, fence func(pgx.Tx) error) (pendingQueueRun, error) {
	var run pendingQueueRun
	poolID, siteID, ok := pendingQueueScope(key)
	if !ok {
		// Nothing enqueues such a key; retrying it would never help.
		h.logger().Warn("reservation queue: the key names no pool or site; dropped", "key", key)
		return run, nil
	}
	var line []db.PendingQueueRankRow
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		line, run.again = nil, 0
		if err := fenced(tx, fence); err != nil {
			return err
		}
		q := db.New(tx)
		dueIn, err := q.PendingQueueDueIn(ctx, db.PendingQueueDueInParams{Scope: key,
			IntervalSeconds: h.pendingRetry().Seconds()})
		if err != nil {
			return pg.Translate(err, "reservation queue "+key)
		}
		if dueIn > 0 {
			run.again = max(time.Duration(dueIn*float64(time.Second)), time.Second)
			return nil
		}
		line, err = q.PendingQueueRank(ctx, db.PendingQueueRankParams{PoolID: poolID, SiteID: siteID, Scope: key,
			HalfLifeSeconds: h.fairShareHalfLife().Seconds(), MaxRows: int32(h.pendingQueueBatch())})
		return pg.Translate(err, "reservation queue "+key)
	})
	if err != nil {
		return pendingQueueRun{}, fmt.Errorf("reservation queue %s: %w", key, err)
	}
	if run.again > 0 || len(line) == 0 {
		return run, nil
	}
	// Some are beyond this run's bound. Those of suspended tenants are
	// neither returned nor counted: the resume wakes the line for them
	// (ResumeTenant).
	waiting := int(line[0].Runnable) > len(line)
	for _, p := range line {
		run.tried = append(run.tried, p.ID)
		err := h.retryPending(ctx, p.ID, fence)
		switch {
		case err == nil:
			run.left = append(run.left, p.ID)
		case workqueue.IsAgain(err):
			waiting = true
		case core.CodeOf(err) == core.CodeTenantSuspended:
			// Its tenant was suspended after the line was ranked: the
			// database refused the placement (tenant_refuse_suspended).
			// It keeps its place; the resume wakes the line.
			h.logger().Info("reservation queue: its tenant was suspended meanwhile; not placed", "key", key, "reservation", p.ID)
		case errors.Is(err, lease.ErrFenced) || ctx.Err() != nil:
			return pendingQueueRun{}, fmt.Errorf("reservation queue %s: %w", key, err)
		default:
			// Best effort: one reservation's failure (a conflict with its
			// cancel, say) does not stop the line; it stays in it.
			run.failed++
			waiting = true
			h.logger().Warn("reservation queue: a try failed", "key", key, "reservation", p.ID, "err", err)
		}
	}
	if len(run.left) > 0 {
		err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
			if err := fenced(tx, fence); err != nil {
				return err
			}
			return pg.Translate(db.New(tx).PendingQueueForget(ctx, run.left), "reservation queue "+key)
		})
		if err != nil {
			return pendingQueueRun{}, fmt.Errorf("reservation queue %s: %w", key, err)
		}
	}
	if waiting {
		run.again = h.pendingRetry()
	}
	return run, nil
}

// wakePendingQueue wakes, now, the line a pending reservation waits in: what
// an item of the old per-reservation retry (reservation.place) does since
// the line replaced it. Enqueueing a queued key keeps its earlier due time,
// and the line puts off a run that comes too soon, so a burst of these
// costs one run. A reservation no longer waiting needs nothing.
func (h *Handlers) wakePendingQueue(ctx context.Context, reservationID string, fence func(pgx.Tx) error) error {
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		if err := fenced(tx, fence); err != nil {
			return err
		}
		q := db.New(tx)
		r, err := q.PendingQueueScopeOf(ctx, reservationID)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && !r.Waiting) {
			return nil
		}
		if err != nil {
			return pg.Translate(err, "reservation "+reservationID)
		}
		return workqueue.Enqueue(ctx, q, KindReservationQueue, PendingQueueKey(derefString(r.PoolID), derefString(r.SiteID)), 0)
	})
	if err != nil {
		return fmt.Errorf("wake the queue of reservation %s: %w", reservationID, err)
	}
	return nil
}

// derefString is *s, or "" for nil.
func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
