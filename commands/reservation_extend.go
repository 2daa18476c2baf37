package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
)

// ExtendLead is how long before its end a running reservation can still be
// extended. The node's daemon stops the workloads at the end by its own
// clock; the wider window reaches it as a new assignment, through the
// dispatcher and a gateway, in well under a second when the node is
// connected. An extension that commits closer to the end than that could be
// acknowledged, booked and billed, and still arrive after the daemon has
// stopped everything, so it is refused instead. A reservation whose window
// has not begun (nothing runs yet) is not held to it.
const ExtendLead = 10 * time.Second

// ExtendReservation moves a reservation's end later, keeping its devices.
type ExtendReservation struct {
	ReservationID  string    `json:"reservationId"`
	NewEnd         time.Time `json:"newEnd"`
	IfVersion      int64     `json:"ifVersion,omitempty"` // 0: no version check
	IdempotencyKey string    `json:"-"`
}

// ExtendReservation runs reservations.extend. A booking's range is never
// widened (an UPDATE that widens raises 23P01): the added segment
// [old end, new end) is inserted per atom by DeviceBookingInsert, and zero
// rows means another reservation holds that time: CONFLICT. The node is
// locked FOR SHARE and the atoms FOR NO KEY UPDATE (lockAtoms) and must
// still be eligible, because an extension is a new booking (no booking
// lands on a cordoned node). Two extends of one reservation race on its
// atoms' locks: the loser's zero rows are a lost race (extendBlocked), run
// again without If-Match. A reservation whose end has passed is not
// extended (CONFLICT), even before its expiry has run, nor a running one
// less than ExtendLead before its end.
func (h *Handlers) ExtendReservation(ctx context.Context, actor core.Actor, cmd ExtendReservation) (ReservationResult, error) {
	if !actor.CanWrite() {
		return ReservationResult{}, core.Errorf(core.CodePermissionDenied, "reservations.extend requires a member or operator role")
	}
	// As PostgreSQL will store it, and in UTC: a retry under the same
	// Idempotency-Key is the same request whatever offset it is written with.
	cmd.NewEnd = cmd.NewEnd.Truncate(time.Microsecond).UTC()
	if cmd.NewEnd.IsZero() {
		return ReservationResult{}, keyReusedFirst(ctx, h, actor, cmd.IdempotencyKey, "reservations.extend", cmd,
			core.Errorf(core.CodeInvalidArgument, "newEnd is required"))
	}
	// Concurrent extends of one reservation: the loser finds the winner's
	// segment in its way and the reservation at a newer version; without
	// If-Match it runs again from the new end, as release and cancel do.
	var res ReservationResult
	err := retryUnversioned(cmd.IfVersion, func() error {
		var err error
		res, err = idempotent(ctx, h, actor, cmd.IdempotencyKey, "reservations.extend", cmd,
			func(ctx context.Context, tx pgx.Tx) (ReservationResult, error) {
				return h.extendReservation(ctx, tx, actor, cmd)
			})
		return err
	})
	if err != nil {
		return ReservationResult{}, fmt.Errorf("reservations.extend %s: %w", cmd.ReservationID, err)
	}
	return res, nil
}

func (h *Handlers) extendReservation(ctx context.Context, tx pgx.Tx, actor core.Actor, cmd ExtendReservation) (ReservationResult, error) {
	q := db.New(tx)
	row, err := loadReservation(ctx, q, actor, cmd.ReservationID)
	if err != nil {
		return ReservationResult{}, err
	}
	if err := checkVersion(cmd.IfVersion, row.Version, "reservation "+row.ID); err != nil {
		return ReservationResult{}, err
	}
	state := core.State(row.State)
	if err := core.CheckTransition(core.ReservationStateTable(), state, state); err != nil {
		return ReservationResult{}, core.Errorf(core.CodeConflict, "reservation %s is %s: only a pending, booked or active reservation can be extended",
			row.ID, state)
	}
	// A window that has ended is over, whether or not the expiry has run
	// yet: the node's daemon stopped its workloads at the end by its own
	// clock, so an extension now would book time nothing runs in.
	now, err := q.ClockNow(ctx)
	if err != nil {
		return ReservationResult{}, pg.Translate(err, "clock")
	}
	if !row.EndTs.After(now) {
		return ReservationResult{}, core.Errorf(core.CodeConflict, "reservation %s ended at %s: a reservation can be extended only before its end",
			row.ID, storedTime(row.EndTs))
	}
	if state != core.ReservationPending && !row.StartTs.After(now) && row.EndTs.Sub(now) < ExtendLead {
		return ReservationResult{}, core.Errorf(core.CodeConflict,
			"reservation %s ends at %s, in less than %s: an extension must reach its node before the end, so it must come at least %s before it",
			row.ID, storedTime(row.EndTs), ExtendLead, ExtendLead)
	}
	if !cmd.NewEnd.After(row.EndTs) {
		return ReservationResult{}, core.Errorf(core.CodeInvalidArgument, "the new end %s is not after the current end %s%s",
			storedTime(cmd.NewEnd), storedTime(row.EndTs), microsecondsHint(cmd.NewEnd, row.EndTs))
	}
	if err := h.checkLength(row.StartTs, cmd.NewEnd); err != nil {
		return ReservationResult{}, err
	}
	allocs, err := q.AllocationListLive(ctx, row.ID)
	if err != nil {
		return ReservationResult{}, pg.Translate(err, "allocations")
	}
	var spec core.ReservationSpec
	r, err := toReservation(row, allocs)
	if err != nil {
		return ReservationResult{}, err
	}
	spec = r.Spec
	if err := planBookingLookupsNow(ctx, tx); err != nil {
		return ReservationResult{}, err
	}
	for _, a := range allocs {
		n, err := q.NodeLockForPlacement(ctx, a.NodeID)
		if err != nil {
			return ReservationResult{}, pg.Translate(err, "node "+a.NodeID)
		}
		if why := nodeIneligible(n.Cordoned, n.NoScheduleReasons, n.State, n.Taints, spec.Tolerations); why != "" {
			return ReservationResult{}, core.Errorf(core.CodeConflict, "cannot extend on node %s: %s", a.NodeID, why)
		}
		if len(a.DeviceIds) > 0 {
			why, err := lockAtoms(ctx, q, a.NodeID, a.DeviceIds, spec.GPU)
			if err != nil {
				return ReservationResult{}, err
			}
			if why != "" {
				return ReservationResult{}, core.Errorf(core.CodeConflict, "cannot extend: %s", why)
			}
		}
		for _, d := range a.DeviceIds { // device-id order, as stored
			n, err := q.DeviceBookingInsert(ctx, db.DeviceBookingInsertParams{DeviceID: d, AllocationID: a.ID,
				FromTs: row.EndTs, ToTs: cmd.NewEnd})
			if pg.IsExclusionViolation(err) { // the constraint, the backstop of the btree check: a concurrent booking
				return ReservationResult{}, core.Wrap(core.CodeConflict, err,
					fmt.Sprintf("cannot extend: %s was booked concurrently; retry", d))
			}
			if err != nil {
				return ReservationResult{}, pg.Translate(err, "booking of "+d)
			}
			if n == 0 {
				return ReservationResult{}, extendBlocked(ctx, q, row, d, cmd.NewEnd)
			}
		}
	}
	n, err := q.ReservationUpdateEnd(ctx, db.ReservationUpdateEndParams{ID: row.ID, Version: row.Version, EndTs: cmd.NewEnd})
	if err := zeroRowsConflict(n, err, "reservation "+row.ID); err != nil {
		return ReservationResult{}, err
	}
	r.End, r.Version = cmd.NewEnd.UTC(), row.Version+1
	pos, err := emit(ctx, q, core.EventReservationExtended, r.Tenant, core.ReservationSubject(r.ID), reservationEvent(r, allocationOf(allocs)))
	if err != nil {
		return ReservationResult{}, err
	}
	// The daemon gets the wider window.
	if err := reassignWithEnd(ctx, q, actor.Identity, allocs, cmd.NewEnd); err != nil {
		return ReservationResult{}, err
	}
	// The queued expiry keeps its earlier due time; it finds the end moved
	// and asks to run again at the new end.
	return ReservationResult{Reservation: r, Position: pos},
		workqueue.Enqueue(ctx, q, KindReservationExpire, r.ID, max(cmd.NewEnd.Sub(now), 0))
}

// extendBlocked says why the added segment of device d could not be
// booked. A concurrent extend of the same reservation that committed first
// booked it (the atoms' lock made this one wait for it): the reservation is
// at a newer version, a lost race (errChangedConcurrently), never stored
// under an idempotency key and run again without If-Match. Otherwise
// another reservation holds that time.
func extendBlocked(ctx context.Context, q *db.Queries, row db.ReservationGetRow, d string, newEnd time.Time) error {
	cur, err := q.ReservationGet(ctx, row.ID)
	if err != nil {
		return pg.Translate(err, "reservation "+row.ID)
	}
	if cur.Version != row.Version {
		return zeroRowsConflict(0, nil, "reservation "+row.ID)
	}
	return core.Errorf(core.CodeConflict,
		"cannot extend: %s is booked by another reservation before %s", d, storedTime(newEnd))
}

// reassignWithEnd sends the node's daemon the allocations of a reservation
// whose end moved (an extension, a preemption's cut back): the assign
// again, keyed by the new end, replaces the one it holds. An allocation
// not assigned yet (its window has not begun) goes with its new end at its
// start.
func reassignWithEnd(ctx context.Context, q *db.Queries, identity string, allocs []db.AllocationListLiveRow, end time.Time) error {
	for _, a := range allocs {
		queued, err := assignQueued(ctx, q, a.NodeID, a.ID)
		if err != nil {
			return err
		}
		if !queued {
			continue
		}
		key := fmt.Sprintf("%s%s:%d", assignKeyPrefix, a.ID, end.UnixMicro())
		if _, err := enqueueAssign(ctx, q, identity, a.ID, fixedKey(key)); err != nil {
			return err
		}
	}
	return nil
}
