// When an allocation reaches its node's daemon.
//
// A node's daemon holds what may run on it now: an allocation is
// assigned when its window begins, in the transaction that activates its
// reservation, or at booking when the window has begun already
// (assignDue). A booking that starts later costs its node nothing until
// then: no job, no generation, no dispatch; one released, cancelled,
// preempted or failed before its start is never sent, and its end queues
// no unassign (NodeDesiredBumpAtIfAssigned). Advance reservations are the
// product's common case, and many end before they begin; the database's
// exclusion constraints, not the daemon, keep their devices apart, the
// daemon's overlap refusal being the defence behind them. Once assigned,
// an allocation's changes (extension, end) go to the daemon as before.

package commands

import (
	"context"
	"time"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// assignDue says whether an allocation whose window begins at start goes
// to its node's daemon now: its window has begun.
func assignDue(start, now time.Time) bool { return !start.After(now) }

// assignQueued says whether an assign of the allocation was ever queued to
// its node: from then on the daemon may hold it.
func assignQueued(ctx context.Context, q *db.Queries, nodeID, allocationID string) (bool, error) {
	queued, err := q.NodeAllocationAssignQueued(ctx, db.NodeAllocationAssignQueuedParams{NodeID: nodeID, AllocationID: allocationID})
	if err != nil {
		return false, pg.Translate(err, "assign jobs of "+allocationID)
	}
	return queued, nil
}

// assignActivated queues the assigns of a reservation that became active,
// in the transaction that activates it: its window has begun, so its
// allocations go to their nodes' daemons now. One assigned at booking (its
// window had begun then) has its key taken, and nothing is queued again.
func assignActivated(ctx context.Context, q *db.Queries, allocs []db.AllocationListLiveRow) error {
	for _, a := range allocs {
		if _, err := enqueueAssign(ctx, q, system.Identity, a.ID, fixedKey(assignKeyPrefix+a.ID)); err != nil {
			return err
		}
	}
	return nil
}
