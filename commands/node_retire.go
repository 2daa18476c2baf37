package commands

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// RetireNode takes a node out of the fleet for good.
type RetireNode struct {
	NodeID    string
	IfVersion int64 // 0: no version check
}

// RetireNode runs nodes.retire (operator only). A node still holding live
// allocations is refused (CONFLICT: release it first), so retiring never
// takes devices from a reservation by surprise; so is a connected node
// whose daemon has unassigns still open, so that the workloads of what was
// released stop before the daemon loses its session for good. Its credentials are
// revoked and its session closed, so its daemon can no longer speak; the
// state is terminal.
func (h *Handlers) RetireNode(ctx context.Context, actor core.Actor, cmd RetireNode) (NodeLifecycleResult, error) {
	if err := requireOperator(actor, "nodes.retire"); err != nil {
		return NodeLifecycleResult{}, err
	}
	var res NodeLifecycleResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		n, err := lockNodeAt(ctx, q, cmd.NodeID, cmd.IfVersion)
		if err != nil {
			return err
		}
		if err := core.CheckTransition(core.NodeLivenessTable(), core.State(n.State), core.NodeRetired); err != nil {
			return err
		}
		live, err := q.NodeLiveReservationIDs(ctx, n.ID)
		if err != nil {
			return pg.Translate(err, "allocations")
		}
		if len(live) > 0 {
			return core.Errorf(core.CodeConflict, "node %s still holds %d reservations; release them first (nodes.release)",
				n.ID, len(live))
		}
		// A release queued the unassigns of what it ended; retiring closes
		// the session they would reach the daemon through, and revokes its
		// credentials, so a connected daemon that has not carried them out
		// yet would keep the released workloads running until their old end
		// (its watchdog's clock). Wait for it; a node away (disconnected,
		// unreachable, lost) can be retired, since nothing reaches it anyway.
		if core.State(n.State) == core.NodeConnected {
			jobs, err := q.NodeAssignmentJobs(ctx, n.ID)
			if err != nil {
				return pg.Translate(err, "assignment jobs")
			}
			open := 0
			for _, j := range jobs {
				if j.Kind == core.NodeCommandUnassign && isOpen(j.State) {
					open++
				}
			}
			if open > 0 {
				return core.Errorf(core.CodeConflict,
					"node %s is connected and its daemon has not yet carried out %d unassigns (the workloads of what was released are still stopping); retire it once they are done",
					n.ID, open)
			}
		}
		rows, err := q.NodeLivenessUpdate(ctx, db.NodeLivenessUpdateParams{ID: n.ID, Version: n.Version,
			State: string(core.NodeRetired), NoScheduleReasons: n.NoScheduleReasons, Conditions: n.Conditions})
		if err := zeroRowsConflict(rows, err, "node "+n.ID); err != nil {
			return err
		}
		if _, err := q.NodeCredentialRevokeAll(ctx, n.ID); err != nil {
			return pg.Translate(err, "node credentials")
		}
		if err := q.NodeSessionRetire(ctx, n.ID); err != nil {
			return pg.Translate(err, "node session")
		}
		res = NodeLifecycleResult{ID: n.ID, State: string(core.NodeRetired), NoScheduleReasons: n.NoScheduleReasons,
			Version: n.Version + 1}
		res.Position, err = emit(ctx, q, core.EventNodeRetired, "", core.NodeSubject(n.ID), core.NodeRetiredEventData{
			ID: n.ID, State: core.NodeRetired, PreviousState: core.State(n.State), Version: res.Version})
		return err
	})
	if err != nil {
		return NodeLifecycleResult{}, fmt.Errorf("nodes.retire %s: %w", cmd.NodeID, err)
	}
	return res, nil
}
