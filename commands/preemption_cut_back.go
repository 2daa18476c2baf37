// Cutting a victim back: a preemptor whose window starts later than its
// victims' grace from now takes their devices from its start only, not
// now (docs/concepts/priority.md#a-preemptor-that-starts-later).

package commands

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
)

// cutBack carries out a plan whose victims keep their devices until the
// preemptor's start (plan.cutBackTo), in the preempting transaction, after
// preempt locked the node, its devices, counters and rollup. Each victim,
// in id order: its bookings end at that start (DeviceBookingsCutBack: they
// only shrink, so the exclusion constraint holds), its end moves there
// under its version guard, reservation.shortened names the preemptor, its
// node's daemon gets the assignment with the new end (as an extension
// sends it) and its expiry is due at the new end. From then on it is a
// reservation that ends where the preemptor starts: it expires there as
// any does, keeps its quota and scalars until then and is billed until
// then; no reservation_preemptions row is written, as it is not
// preempted. A victim that changed since the plan was read, or a start no
// longer more than its grace away, is errPreemptionLost: the plan is read
// again.
func (h *Handlers) cutBack(ctx context.Context, tx pgx.Tx, plan *preemptionPlan, by preemptor) error {
	q := db.New(tx)
	to := *plan.cutBackTo
	now, err := q.ClockNow(ctx)
	if err != nil {
		return pg.Translate(err, "clock")
	}
	for _, v := range plan.victims {
		v.Now = now
		if !deferrable(v, to) {
			return fmt.Errorf("%w: reservation %s: the preemptor's start is within its grace now", errPreemptionLost, v.ReservationID)
		}
		var read reservationRead
		var b pg.Batch
		read.queue(ctx, &b, v.ReservationID)
		if err := b.Send(ctx, tx); err != nil {
			return pg.Translate(err, "reservation "+v.ReservationID)
		}
		state := core.State(read.row.State)
		if !read.found || read.row.Version != v.Version || (state != core.ReservationBooked && state != core.ReservationActive) ||
			!read.row.EndTs.After(to) {
			return fmt.Errorf("%w: reservation %s changed", errPreemptionLost, v.ReservationID)
		}
		r, err := toReservation(read.row, read.allocs)
		if err != nil {
			return err
		}
		for _, a := range read.allocs {
			if _, err := q.DeviceBookingsCutBack(ctx, db.DeviceBookingsCutBackParams{AllocationID: a.ID, EndTs: to}); err != nil {
				return pg.Translate(err, "bookings of "+a.ID)
			}
		}
		n, err := q.ReservationUpdateEnd(ctx, db.ReservationUpdateEndParams{ID: r.ID, Version: read.row.Version, EndTs: to})
		if err != nil {
			return pg.Translate(err, "reservation "+r.ID)
		}
		if n == 0 {
			return fmt.Errorf("%w: reservation %s changed", errPreemptionLost, r.ID)
		}
		r.End, r.Version = to.UTC(), read.row.Version+1
		data := reservationEvent(r, allocationOf(read.allocs))
		data.PreemptedBy = by.id
		if _, err := emit(ctx, q, core.EventReservationShortened, r.Tenant, core.ReservationSubject(r.ID), data); err != nil {
			return err
		}
		if err := reassignWithEnd(ctx, q, system.Identity, read.allocs, to); err != nil {
			return err
		}
		// The queued expiry is due at the old end: queued again, it keeps
		// the earlier due time, the new end.
		if err := workqueue.Enqueue(ctx, q, KindReservationExpire, r.ID, max(to.Sub(now), 0)); err != nil {
			return err
		}
	}
	return nil
}
