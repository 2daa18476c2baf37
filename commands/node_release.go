package commands

import (
	"context"
	"fmt"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// ReleaseNode gives back every reservation holding the node's devices.
// Liveness never does this on its own ("disconnected is not dead"): only an
// operator who knows the machine is gone does.
type ReleaseNode struct {
	NodeID string
}

// ReleaseNode runs nodes.release (operator only). Each reservation is
// released in its own transaction by reservations.release, so quota is
// refunded and capacity freed exactly as when its tenant releases it; a
// retry after a partial failure releases what is left. It does not change
// the node: drain it first so that nothing new lands on it meanwhile.
func (h *Handlers) ReleaseNode(ctx context.Context, actor core.Actor, cmd ReleaseNode) (NodeLifecycleResult, error) {
	if err := requireOperator(actor, "nodes.release"); err != nil {
		return NodeLifecycleResult{}, err
	}
	q := db.New(h.Pool)
	n, err := q.NodeGet(ctx, cmd.NodeID)
	if err != nil {
		return NodeLifecycleResult{}, fmt.Errorf("nodes.release %s: %w", cmd.NodeID, pg.Translate(err, "node "+cmd.NodeID))
	}
	ids, err := q.NodeLiveReservationIDs(ctx, cmd.NodeID)
	if err != nil {
		return NodeLifecycleResult{}, fmt.Errorf("nodes.release %s: %w", cmd.NodeID, pg.Translate(err, "allocations"))
	}
	res := NodeLifecycleResult{ID: n.ID, State: n.State, NoScheduleReasons: n.NoScheduleReasons, Version: n.Version,
		Released: []string{}}
	if err := h.releaseListed(ctx, q, actor, ids, &res); err != nil {
		return res, fmt.Errorf("nodes.release %s: %w", cmd.NodeID, err)
	}
	if len(ids) == 0 {
		return res, nil
	}
	// The node as it is after the releases, not as read before them.
	if n, err = q.NodeGet(ctx, cmd.NodeID); err != nil {
		return res, fmt.Errorf("nodes.release %s: %w", cmd.NodeID, pg.Translate(err, "node "+cmd.NodeID))
	}
	res.State, res.NoScheduleReasons, res.Version = n.State, n.NoScheduleReasons, n.Version
	return res, nil
}

// releaseListed releases each listed reservation, in its own transaction.
// The list was read before: a reservation that has ended since (its tenant
// released it, it expired or was preempted) has nothing left to give back,
// so its release's CONFLICT is skipped rather than failing the whole
// command halfway, with the reservations after it still live.
func (h *Handlers) releaseListed(ctx context.Context, q *db.Queries, actor core.Actor, ids []string, res *NodeLifecycleResult) error {
	for _, id := range ids {
		r, err := h.ReleaseReservation(ctx, actor, ReleaseReservation{ReservationID: id})
		if err != nil {
			if core.CodeOf(err) == core.CodeConflict {
				if row, gerr := q.ReservationGet(ctx, id); gerr == nil &&
					core.ReservationStateTable().Terminal[core.State(row.State)] {
					continue // ended concurrently: nothing to release
				}
			}
			return err
		}
		res.Released = append(res.Released, id)
		res.Position = r.Position
	}
	return nil
}
