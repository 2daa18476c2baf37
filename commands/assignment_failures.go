// What a failed assign does to its reservation.

package commands

import (
	"context"
	"fmt"
	"strings"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/wire"
	"github.com/jackc/pgx/v5"
)

// assignFailure classifies the reason of a failed assign: "Refused" (the
// daemon holds one of its devices for an overlapping window) or "Rejected"
// (anything else the daemon found wrong with it) fail its reservation;
// transient ones (the daemon could not write its journal; the control plane
// gave up on a daemon that lost its memory; a GPU of the booking is not on
// the machine now) do not: the resync sends the assign again.
func assignFailure(reason string) (kind string, fails bool) {
	switch {
	case strings.HasPrefix(reason, AssignRefusedPrefix):
		return "Refused", true
	case strings.HasPrefix(reason, "journal: "), reason == lostMemoryReason:
		return "", false
	case strings.HasSuffix(reason, wire.NotOnThisNode):
		// A GPU of the booking is not on the machine now: the booking is
		// kept, and the resync's assign waits until the GPU is reported
		// again (holdWhileGPUsMissing).
		return "", false
	}
	return "Rejected", true
}

// failAssignedReservation fails the reservation of an assign job that
// failed for good, in the transaction that records the failure: its quota
// is refunded, its bookings freed, its instances failed, and
// reservation.failed is raised, with an AssignmentFailed condition carrying
// the daemon's reason. No unassign is queued unless an earlier assign of
// the allocation succeeded (an extension refused: the daemon holds the
// allocation's original window). A reservation that already ended is left
// alone.
func failAssignedReservation(ctx context.Context, tx pgx.Tx, c db.NodeCommand, kind, reason string) error {
	q := db.New(tx)
	if c.AllocationID == nil {
		return nil
	}
	a, err := q.AllocationAssignment(ctx, *c.AllocationID)
	if err != nil {
		return pg.Translate(err, "allocation "+*c.AllocationID)
	}
	if s := core.State(a.State); a.Released || (s != core.ReservationBooked && s != core.ReservationActive) {
		return nil
	}
	held, err := q.AllocationAssignedBefore(ctx, db.AllocationAssignedBeforeParams{AllocationID: &a.ID, JobID: c.ID})
	if err != nil {
		return pg.Translate(err, "assign jobs")
	}
	cond := core.Condition{Type: core.ConditionAssignmentFailed, Status: true, Reason: kind,
		Message: fmt.Sprintf("node %s did not take the assignment: %s", c.NodeID, reason)}
	_, err = endReservationWith(ctx, tx, system, a.ReservationID, 0, reservationEnd{to: core.ReservationFailed,
		event: core.EventReservationFailed, conditions: []core.Condition{cond},
		reason: "reservation failed: " + reason, unassign: held}, nil)
	return err
}
