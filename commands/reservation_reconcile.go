package commands

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
)

// system is the actor reconcilers act as: it sees every tenant.
var system = core.Actor{Identity: "system:reconciler", Role: core.RoleOperator}

// fenceOf is the fence of a work item's transactions: the first statement
// of each locks the item's shard lease at the epoch it was claimed under
// (lease.Lease.Fence), so a worker whose shard was taken over cannot write.
func fenceOf(ctx context.Context, it workqueue.Item) func(pgx.Tx) error {
	return func(tx pgx.Tx) error { return it.Lease.Fence(ctx, tx) }
}

// fenced runs fence (when set) as the first statement of tx.
func fenced(tx pgx.Tx, fence func(pgx.Tx) error) error {
	if fence == nil {
		return nil
	}
	return fence(tx)
}

// ReservationPlace is the KindReservationPlace work-queue handler, for
// items queued before the line of the reservation's scope replaced them
// (pending_queue.go): it wakes that line now, fenced by the item's shard
// lease.
func (r Reconcilers) ReservationPlace(ctx context.Context, it workqueue.Item) error {
	return r.h.wakePendingQueue(ctx, it.Key, fenceOf(ctx, it))
}

// ReservationActivate is the reservation.activate reconciler, the
// KindReservationActivate work-queue handler: a booked reservation whose
// start has passed (per compute_now()) becomes active, its expiry is queued
// for its end and its allocations are assigned to their nodes (a booking's
// one timer is its activation). An early run asks to run again at the
// start; a run after the end expires it instead. Its transaction is
// fenced by the item's shard lease.
func (r Reconcilers) ReservationActivate(ctx context.Context, it workqueue.Item) error {
	return r.h.timedTransition(ctx, it.Key, fenceOf(ctx, it), decideActivation)
}

// ReservationExpire is the reservation.expire reconciler, the
// KindReservationExpire work-queue handler: a reservation whose end has
// passed (per compute_now()) becomes expired, refunding its quota and
// freeing its capacity. An early run (the end was extended) asks to run
// again at the end. Its transaction is fenced by the item's shard lease.
func (r Reconcilers) ReservationExpire(ctx context.Context, it workqueue.Item) error {
	return r.h.timedTransition(ctx, it.Key, fenceOf(ctx, it), decideExpiry)
}

// RetryPending is one try of a reservation's line (pending_queue.go): it
// tries to place a pending reservation again, preempting when its class
// may (preemption.go). It returns nil when there is nothing left to do
// (booked, or no longer pending), and workqueue.Again(30 s) when it is
// still unschedulable, after refreshing the Unschedulable condition's
// reasons.
// Unfenced: workers run it within Reconcilers.ReservationQueue.
func (h *Handlers) RetryPending(ctx context.Context, reservationID string) error {
	return h.retryPending(ctx, reservationID, nil)
}

func (h *Handlers) retryPending(ctx context.Context, reservationID string, fence func(pgx.Tx) error) error {
	stillPending := false
	var toPlace reservationToPlace // as the last run read it, for a preemption plan
	var priority int32
	plan := func() (*preemptionPlan, error) { return h.planPreemption(ctx, toPlace, priority) }
	_, err := withPreemption(h, plan, func(plan *preemptionPlan, mayPreempt bool) (struct{}, error) {
		return struct{}{}, pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
			stillPending = false
			if err := fenced(tx, fence); err != nil {
				return err
			}
			q := db.New(tx)
			if plan != nil { // quota_usage first: the victims' tenants' rows and this one's, in order
				if _, err := q.QuotaUsageLockTenants(ctx, plan.tenants); err != nil {
					return pg.Translate(err, "quota")
				}
			}
			var err error
			stillPending, err = h.retryPendingIn(ctx, tx, reservationID, plan, mayPreempt, &toPlace, &priority)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("retry pending reservation %s: %w", reservationID, err)
	}
	if stillPending {
		return workqueue.Again(h.pendingRetry())
	}
	return nil
}

// retryPendingIn is one try of retryPending in tx: it places the
// reservation (with a plan, on the plan's node once its victims are
// preempted) and reports whether it is still pending. toPlace and priority
// are set to what a preemption plan needs; with mayPreempt, finding no
// node while its class may preempt is errMayPreempt.
func (h *Handlers) retryPendingIn(ctx context.Context, tx pgx.Tx, reservationID string, plan *preemptionPlan, mayPreempt bool,
	toPlace *reservationToPlace, priority *int32) (stillPending bool, err error) {
	q := db.New(tx)
	row, err := loadReservation(ctx, q, system, reservationID)
	if err != nil {
		return false, err
	}
	if core.State(row.State) != core.ReservationPending {
		return false, nil
	}
	past, err := q.ReservationIsPastEnd(ctx, row.ID)
	if err != nil {
		return false, pg.Translate(err, "reservation")
	}
	if past.PastEnd {
		return false, nil // the expiry reconciler moves it to expired
	}
	r, err := toReservation(row, nil)
	if err != nil {
		return false, err
	}
	if err := core.CheckTransition(core.ReservationStateTable(), r.State, core.ReservationBooked); err != nil {
		return false, err
	}
	now, err := q.ClockNow(ctx)
	if err != nil {
		return false, pg.Translate(err, "clock")
	}
	start := r.Start
	if start.Before(now) {
		start = now
	}
	// quota_usage first: the model quota rows placement may charge.
	modelQuotas, err := lockQuota(ctx, q, r.Tenant, nil, r.Spec)
	if err != nil {
		return false, err
	}
	p := reservationToPlace{reservationID: r.ID, poolID: r.PoolID, siteID: r.SiteID, spec: r.Spec, start: start,
		end: r.End, tenant: r.Tenant, modelQuotas: modelQuotas}
	*toPlace, *priority = p, r.Priority
	where, reasons, err := h.placePending(ctx, tx, p, r, plan, mayPreempt)
	if err != nil {
		return false, err
	}
	if where == nil {
		return true, refreshUnschedulable(ctx, q, r, reasons)
	}
	r.State, r.Conditions, r.Version = core.ReservationBooked, []core.Condition{}, row.Version+1
	r.NodeID, r.DeviceIDs = where.nodeID, where.deviceIDs
	n, err := q.ReservationUpdateState(ctx, db.ReservationUpdateStateParams{ID: r.ID, Version: row.Version,
		State: string(r.State), Conditions: mustJSON(r.Conditions)})
	if err := zeroRowsConflict(n, err, "reservation "+r.ID); err != nil {
		return false, err
	}
	if len(where.modelCharges) > 0 { // the model placed is charged now: record it for the refund
		if r.Charges == nil {
			r.Charges = map[string]int64{}
		}
		maps.Copy(r.Charges, where.modelCharges)
		n, err := q.ReservationSetCharges(ctx, db.ReservationSetChargesParams{ID: r.ID, Version: r.Version,
			Charges: mustJSON(r.Charges)})
		if err := zeroRowsConflict(n, err, "reservation "+r.ID); err != nil {
			return false, err
		}
	}
	data := reservationEvent(r, where.allocationID)
	data.PlacedPoolID = where.poolID
	if _, err := emit(ctx, q, core.EventReservationBooked, r.Tenant, core.ReservationSubject(r.ID), data); err != nil {
		return false, err
	}
	if err := scheduleBooked(ctx, q, r.ID, now, start, r.End); err != nil {
		return false, err
	}
	if !assignDue(start, now) {
		return false, nil // its activation assigns it (assignments.go)
	}
	_, err = enqueueAssign(ctx, q, system.Identity, where.allocationID, fixedKey(assignKeyPrefix+where.allocationID))
	return false, err
}

// refreshUnschedulable sets a still-pending reservation's Unschedulable
// condition to this try's reasons. When they differ from the stored ones
// (the taint that kept it out was removed, a node filled up) the
// reservation moves to a new version and reservation.pending says so, with
// the whole reservation, so the read model and the tenant's webhooks see
// why it waits now; when they do not, nothing is written, so a reservation
// waiting for hours does not add an event to the log every 30 s.
func refreshUnschedulable(ctx context.Context, q *db.Queries, r core.Reservation, reasons []string) error {
	conditions := unschedulable(reasons)
	n, err := q.ReservationSetConditions(ctx, db.ReservationSetConditionsParams{ID: r.ID, Version: r.Version,
		Conditions: mustJSON(conditions)})
	if err != nil {
		return pg.Translate(err, "reservation")
	}
	if n == 0 { // unchanged, or changed by another transaction first (its own event says so)
		return nil
	}
	r.Conditions, r.Version = conditions, r.Version+1
	_, err = emit(ctx, q, core.EventReservationPending, r.Tenant, core.ReservationSubject(r.ID), reservationEvent(r, ""))
	return err
}

// placePending places a pending reservation r: among its scope's nodes,
// or, with a plan, on the plan's node once the plan's victims are
// preempted. With mayPreempt, no node while r's priority may preempt is
// errMayPreempt.
func (h *Handlers) placePending(ctx context.Context, tx pgx.Tx, p reservationToPlace, r core.Reservation, plan *preemptionPlan,
	mayPreempt bool) (*placed, []string, error) {
	if plan == nil {
		where, reasons, err := h.place(ctx, tx, p)
		if err != nil || where != nil || !mayPreempt {
			return where, reasons, err
		}
		may, err := db.New(tx).PreemptionMayPreempt(ctx, r.Priority)
		if err != nil {
			return nil, nil, pg.Translate(err, "priority classes")
		}
		if may {
			return nil, nil, errMayPreempt
		}
		return nil, reasons, nil
	}
	if err := h.preempt(ctx, tx, plan, preemptor{id: r.ID, class: r.PriorityClass, priority: r.Priority}); err != nil {
		return nil, nil, err
	}
	var tail pg.Batch
	where, err := h.placeAfterPreemption(ctx, tx, p, plan, &tail)
	if err != nil {
		return nil, nil, err
	}
	tail.Statement("RELEASE SAVEPOINT " + savepointName)
	return where, nil, pg.Translate(tail.Send(ctx, tx), "placement savepoint")
}

func decideActivation(row db.ReservationGetRow, past db.ReservationIsPastEndRow) (core.State, string, time.Time) {
	switch {
	case core.State(row.State) != core.ReservationBooked:
		return "", "", time.Time{}
	case !past.PastStart:
		return "", "", row.StartTs
	case past.PastEnd:
		// The whole window passed before the activation ran: never
		// activated (no reservation.activated, no assign to its node), it
		// ends as its expiry would end it, whichever of the two runs first.
		return core.ReservationExpired, core.EventReservationExpired, time.Time{}
	}
	return core.ReservationActive, core.EventReservationActivated, time.Time{}
}

func decideExpiry(row db.ReservationGetRow, past db.ReservationIsPastEndRow) (core.State, string, time.Time) {
	switch {
	case !core.ReservationHoldsQuota(core.State(row.State)):
		return "", "", time.Time{}
	case !past.PastEnd:
		return "", "", row.EndTs
	}
	return core.ReservationExpired, core.EventReservationExpired, time.Time{}
}

// timedTransition applies the transition decide returns for a reservation
// as of compute_now(): a state and event, nothing (""), or a time to run
// again at, returned as workqueue.Again. fence, when set, is the first
// statement of its transaction.
func (h *Handlers) timedTransition(ctx context.Context, id string, fence func(pgx.Tx) error,
	decide func(row db.ReservationGetRow, past db.ReservationIsPastEndRow) (core.State, string, time.Time)) error {
	var again time.Duration
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		again = 0
		if err := fenced(tx, fence); err != nil {
			return err
		}
		q := db.New(tx)
		row, err := loadReservation(ctx, q, system, id)
		if err != nil {
			return err
		}
		past, err := q.ReservationIsPastEnd(ctx, id)
		if err != nil {
			return pg.Translate(err, "reservation")
		}
		to, event, at := decide(row, past)
		if !at.IsZero() {
			now, err := q.ClockNow(ctx)
			if err != nil {
				return pg.Translate(err, "clock")
			}
			again = max(at.Sub(now), time.Second)
			return nil
		}
		if to == "" {
			return nil
		}
		if to == core.ReservationExpired {
			_, err = endReservation(ctx, tx, system, id, row.Version, to, event)
			return err
		}
		if err := core.CheckTransition(core.ReservationStateTable(), core.State(row.State), to); err != nil {
			return err
		}
		// quota_usage first, as every transaction that changes a reservation
		// and then its node takes it: the activation assigns the allocations
		// (node_desired, last in the lock order), and a preemption that ends
		// this reservation holds its tenant's rows from its start, so the
		// two serialise here instead of deadlocking on the reservation row
		// and the node's generation.
		if _, err := q.QuotaUsageLockTenants(ctx, []string{row.TenantID}); err != nil {
			return pg.Translate(err, "quota")
		}
		allocs, err := q.AllocationListLive(ctx, id)
		if err != nil {
			return pg.Translate(err, "allocations")
		}
		r, err := toReservation(row, allocs)
		if err != nil {
			return err
		}
		r.State, r.Version = to, row.Version+1
		n, err := q.ReservationUpdateState(ctx, db.ReservationUpdateStateParams{ID: id, Version: row.Version,
			State: string(to), Conditions: row.Conditions})
		if err := zeroRowsConflict(n, err, "reservation "+id); err != nil {
			return err
		}
		if _, err := emit(ctx, q, event, r.Tenant, core.ReservationSubject(id), reservationEvent(r, allocationOf(allocs))); err != nil {
			return err
		}
		// Active: its expiry is due at its end (a booking's only timer is
		// its activation), and its allocations go to their nodes.
		if err := workqueue.Enqueue(ctx, q, KindReservationExpire, id, max(row.EndTs.Sub(past.Now), 0)); err != nil {
			return err
		}
		return assignActivated(ctx, q, allocs)
	})
	if err != nil {
		return fmt.Errorf("reservation %s: %w", id, err)
	}
	if again > 0 {
		return workqueue.Again(again)
	}
	return nil
}
