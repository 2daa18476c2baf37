package commands

import (
	"context"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// staleStartReason is why dispatch cancels an instance-start.
const staleStartReason = "its instance stopped before the start was sent"

// cancelStaleStart cancels a queued instance-start whose instance is no
// longer requested: its reservation ended (a release, an expiry, a
// preemption) or the instance was deleted while the start waited, most
// often behind its assign, which waits for a preempted victim's grace.
// Sent, it would start the workload on devices the tenant no longer holds,
// or that it asked to stop, until the unassign or the stop after it ends
// it. The instance is left as it is: stopping, it ends with the unassign
// or the stop queued for it (the daemon acknowledges a stop of an instance
// it never ran). The instance is read without a lock: one that moves on
// after this read has its start sent as before, and stopped after.
func cancelStaleStart(ctx context.Context, q *db.Queries, c db.NodeCommand) (bool, error) {
	if c.Kind != core.NodeCommandInstanceStart || c.InstanceID == nil {
		return false, nil
	}
	i, err := q.InstanceGet(ctx, *c.InstanceID)
	if err != nil {
		return false, pg.Translate(err, "instance "+*c.InstanceID)
	}
	if core.State(i.State) == core.ProvisionRequested {
		return false, nil
	}
	if _, err := moveNodeJob(ctx, q, c, core.CommandCancelled, nil, c.Output, staleStartReason); err != nil {
		return false, err
	}
	return true, nil
}
