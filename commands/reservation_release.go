package commands

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// ReleaseReservation gives a booked or active reservation back.
type ReleaseReservation struct {
	ReservationID string
	IfVersion     int64 // 0: no version check
}

// ReleaseReservation runs reservations.release: the quota rows are locked
// first, then the state moves to released and the quota is refunded, then bookings from now on, counters and
// the pool rollup are freed.
func (h *Handlers) ReleaseReservation(ctx context.Context, actor core.Actor, cmd ReleaseReservation) (ReservationResult, error) {
	if !actor.CanWrite() {
		return ReservationResult{}, core.Errorf(core.CodePermissionDenied, "reservations.release requires a member or operator role")
	}
	var res ReservationResult
	err := retryUnversioned(cmd.IfVersion, func() error {
		var read reservationRead
		return pg.InTxBatch(ctx, h.Pool, func(b *pg.Batch) { read.queue(ctx, b, cmd.ReservationID) }, func(tx pgx.Tx) error {
			end := plainEnd(core.ReservationReleased, core.EventReservationReleased)
			end.commit = true // nothing follows the release in its transaction
			var err error
			res, err = endReservationWith(ctx, tx, actor, cmd.ReservationID, cmd.IfVersion, end, &read)
			return err
		})
	})
	if err != nil {
		return ReservationResult{}, fmt.Errorf("reservations.release %s: %w", cmd.ReservationID,
			pg.Translate(err, "reservation "+cmd.ReservationID))
	}
	return res, nil
}

// endReservation moves a reservation to a terminal state (released,
// cancelled, expired): see endReservationWith. Its allocations are taken
// back from their node's daemon.
func endReservation(ctx context.Context, tx pgx.Tx, actor core.Actor, id string, ifVersion int64,
	to core.State, event string) (ReservationResult, error) {
	return endReservationWith(ctx, tx, actor, id, ifVersion, plainEnd(to, event), nil)
}

// plainEnd is the end of a reservation that its tenant or its window
// ends: no condition, its allocations unassigned.
func plainEnd(to core.State, event string) reservationEnd {
	return reservationEnd{to: to, event: event, conditions: []core.Condition{}, reason: "reservation " + string(to), unassign: true}
}

// reservationRead is what an end starts from: the reservation and its live
// allocations, read in one round trip, which a command sends with its
// BEGIN (pg.InTxBatch).
type reservationRead struct {
	row    db.ReservationGetRow
	found  bool
	allocs []db.AllocationListLiveRow
}

// queue queues the reads in b.
func (rd *reservationRead) queue(ctx context.Context, b *pg.Batch, id string) {
	*rd = reservationRead{}
	pg.One(ctx, b, (*db.Queries).ReservationGet, id, &rd.row, &rd.found)
	pg.Many(ctx, b, (*db.Queries).AllocationListLive, id, &rd.allocs)
}

// reservationEnd is how a reservation ends.
type reservationEnd struct {
	to    core.State
	event string
	// conditions are the reservation's after the end.
	conditions []core.Condition
	// reason goes to the unassign and to the instances the end stops.
	reason string
	// unassign says whether the node's daemon may hold the allocations:
	// they are then unassigned and their instances stop; otherwise their
	// instances fail.
	unassign bool
	// commit says the end is the last work of its transaction: its last
	// batch may commit it (pg.Batch.Commit), which saves a round trip.
	commit bool
	// A preemption's: the preemptor, named in the event's data, and the
	// grace its workloads get (the unassign carries it to the daemon).
	preemptedBy string
	grace       *int32
}

// endReservationWith moves a reservation to a terminal state: lock its
// quota rows and refund them (quota_usage first in the lock order), write
// the transition with a version guard, free its capacity, append the
// event, and carry the end over to its allocations on their nodes
// (instances to stopping and an unassign queued, in this same transaction,
// so that the API shows them stopping at once).
//
// In round trips: the read (read, or one of its own); every lock and write
// of the end at once, with the allocations' instances and unassign keys
// read and the node's generation taken, checked on their results (a check
// that fails rolls the whole transaction back); the unassign with its
// event and the reservation's, and the commit when end.commit.
func endReservationWith(ctx context.Context, tx pgx.Tx, actor core.Actor, id string, ifVersion int64,
	end reservationEnd, read *reservationRead) (ReservationResult, error) {
	q := db.New(tx)
	if read == nil {
		read = &reservationRead{}
		var b pg.Batch
		read.queue(ctx, &b, id)
		if err := b.Send(ctx, tx); err != nil {
			return ReservationResult{}, pg.Translate(err, "reservation "+id)
		}
	}
	row, allocs := read.row, read.allocs
	if !read.found || !actor.Sees(row.TenantID) {
		return ReservationResult{}, core.Errorf(core.CodeNotFound, "reservation %s not found", id)
	}
	if err := checkVersion(ifVersion, row.Version, "reservation "+id); err != nil {
		return ReservationResult{}, err
	}
	from := core.State(row.State)
	if err := core.CheckTransition(core.ReservationStateTable(), from, end.to); err != nil {
		if end.to == core.ReservationCancelled && (from == core.ReservationBooked || from == core.ReservationActive) {
			// The refusal a tenant meets most: say which call ends it.
			return ReservationResult{}, core.Errorf(core.CodeConflict,
				"reservation %s is %s and cannot become cancelled: cancel withdraws a pending reservation; release a booked or active one", id, from)
		}
		// Named, as above: a script releasing many reservations learns
		// which one was already ended.
		return ReservationResult{}, core.Errorf(core.CodeConflict, "reservation %s is %s and cannot become %s", id, from, end.to)
	}
	r, err := toReservation(row, allocs)
	if err != nil {
		return ReservationResult{}, err
	}
	var b pg.Batch
	holds := core.ReservationHoldsQuota(from)
	refund, amounts := sortedAmounts(r.Charges)
	var refunded []string
	if holds && len(refund) > 0 {
		// quota_usage first: lock the rows to refund and refund them, before
		// the transition. Of concurrent ends of one reservation only the one
		// whose version guard matches commits; the others roll back, refund
		// included (CONFLICT, retried without If-Match, then the state
		// table's CONFLICT), so a charge is never refunded twice.
		pg.Many(ctx, &b, (*db.Queries).QuotaUsageLockAndRefund, db.QuotaUsageLockAndRefundParams{TenantID: row.TenantID,
			Resources: refund, Amounts: amounts}, &refunded)
	}
	r.State, r.Conditions, r.Version = end.to, end.conditions, row.Version+1
	if r.Conditions == nil {
		r.Conditions = []core.Condition{}
	}
	var transitioned int64
	pg.ExecRows(ctx, &b, (*db.Queries).ReservationUpdateState, db.ReservationUpdateStateParams{ID: id, Version: row.Version,
		State: string(end.to), Conditions: mustJSON(r.Conditions)}, &transitioned)
	freed := queueFreeCapacity(ctx, &b, allocs, r.Spec)
	// The event goes with the first unassign (endAllocationsRead), or now
	// when there is none to queue.
	var pos outbox.Position
	var tail batchTail
	data := reservationEvent(r, allocationOf(allocs))
	data.PreemptedBy = end.preemptedBy
	if err := tail.emit(end.event, r.Tenant, core.ReservationSubject(id), data, &pos); err != nil {
		return ReservationResult{}, err
	}
	ends := queueAllocationEnds(ctx, &b, r, allocs, end.unassign, from == core.ReservationActive)
	ends.commit, ends.grace = end.commit, end.grace
	if len(allocs) == 0 || !end.unassign {
		tail.queue(ctx, &b) // no unassign to travel with: the event goes now
	}
	if err := b.Send(ctx, tx); err != nil {
		return ReservationResult{}, pg.Translate(err, "reservation "+id)
	}
	if err := zeroRowsConflict(transitioned, nil, "reservation "+id); err != nil {
		return ReservationResult{}, err
	}
	if holds {
		for i, res := range refund {
			if !slices.Contains(refunded, res) {
				return ReservationResult{}, fmt.Errorf("refund %d %s to %s: quota row missing or below the charge",
					amounts[i], res, row.TenantID)
			}
		}
	}
	if err := freed.check(); err != nil {
		return ReservationResult{}, err
	}
	if err := endAllocationsRead(ctx, tx, q, actor.Identity, r, allocs, ends, end.reason, end.unassign, &tail); err != nil {
		return ReservationResult{}, err
	}
	return ReservationResult{Reservation: r, Position: pos}, nil
}
