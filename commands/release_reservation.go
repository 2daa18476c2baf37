package commands

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
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
		return pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
			var err error
			res, err = endReservation(ctx, db.New(tx), actor, cmd.ReservationID, cmd.IfVersion,
				core.ReservationReleased, core.EventReservationReleased)
			return err
		})
	})
	if err != nil {
		return ReservationResult{}, fmt.Errorf("reservations.release %s: %w", cmd.ReservationID, err)
	}
	return res, nil
}

// endReservation moves a reservation to a terminal state (released,
// cancelled, expired): see endReservationWith. Its allocations are taken
// back from their node's daemon.
func endReservation(ctx context.Context, q *db.Queries, actor core.Actor, id string, ifVersion int64,
	to core.State, event string) (ReservationResult, error) {
	return endReservationWith(ctx, q, actor, id, ifVersion, reservationEnd{to: to, event: event,
		conditions: []core.Condition{}, reason: "reservation " + string(to), unassign: true})
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
}

// endReservationWith moves a reservation to a terminal state: lock its
// quota rows (quota_usage first in the lock order), write the transition
// with a version guard, refund its quota, free its capacity, append the event, and carry the end
// over to its allocations on their nodes (endAllocations: instances to
// stopping and an unassign queued, in this same transaction, so that the
// API shows them stopping at once).
func endReservationWith(ctx context.Context, q *db.Queries, actor core.Actor, id string, ifVersion int64,
	end reservationEnd) (ReservationResult, error) {
	row, err := loadReservation(ctx, q, actor, id)
	if err != nil {
		return ReservationResult{}, err
	}
	if err := checkVersion(ifVersion, row.Version, "reservation "+id); err != nil {
		return ReservationResult{}, err
	}
	from := core.State(row.State)
	if err := core.CheckTransition(core.ReservationStateTable(), from, end.to); err != nil {
		return ReservationResult{}, err
	}
	allocs, err := q.AllocationListLive(ctx, id)
	if err != nil {
		return ReservationResult{}, pg.Translate(err, "allocations")
	}
	r, err := toReservation(row, allocs)
	if err != nil {
		return ReservationResult{}, err
	}
	holds := core.ReservationHoldsQuota(from)
	if holds { // quota_usage first: lock the rows to refund before the transition
		if _, err := q.QuotaUsageLockForCharge(ctx, db.QuotaUsageLockForChargeParams{TenantID: row.TenantID,
			Resources: slices.Collect(maps.Keys(r.Charges))}); err != nil {
			return ReservationResult{}, pg.Translate(err, "quota")
		}
	}
	r.State, r.Conditions, r.Version = end.to, end.conditions, row.Version+1
	if r.Conditions == nil {
		r.Conditions = []core.Condition{}
	}
	// The version-guarded transition before the refund: of concurrent ends
	// of one reservation, only the one whose guard matches refunds; the
	// others get CONFLICT (retried without If-Match, then the state table's
	// CONFLICT), never a second refund.
	n, err := q.ReservationUpdateState(ctx, db.ReservationUpdateStateParams{ID: id, Version: row.Version,
		State: string(end.to), Conditions: mustJSON(r.Conditions)})
	if err := zeroRowsConflict(n, err, "reservation "+id); err != nil {
		return ReservationResult{}, err
	}
	if holds {
		if err := refundQuota(ctx, q, row.TenantID, row.Charges); err != nil {
			return ReservationResult{}, err
		}
	}
	if err := freeCapacity(ctx, q, id, r.Spec); err != nil {
		return ReservationResult{}, err
	}
	pos, err := emit(ctx, q, end.event, r.Tenant, core.ReservationSubject(id), reservationEvent(r, allocationOf(allocs)))
	if err != nil {
		return ReservationResult{}, err
	}
	if err := endAllocations(ctx, q, actor.Identity, r, allocs, end.reason, end.unassign); err != nil {
		return ReservationResult{}, err
	}
	return ReservationResult{Reservation: r, Position: pos}, nil
}
