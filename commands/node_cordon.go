package commands

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// CordonNode keeps new bookings off a node (cordon) or lets them back
// (uncordon). Existing reservations are untouched.
type CordonNode struct {
	NodeID    string
	IfVersion int64 // 0: no version check
}

// CordonNode runs nodes.cordon (operator only). Because the placer holds
// the node row FOR SHARE while it books, the cordon waits for placements in
// flight and every placement after it sees it (rule 4).
func (h *Handlers) CordonNode(ctx context.Context, actor core.Actor, cmd CordonNode) (NodeResult, error) {
	return h.changeScheduling(ctx, actor, "nodes.cordon", cmd.NodeID, cmd.IfVersion,
		func(n *db.NodeGetForUpdateRow) (string, bool) {
			if n.Cordoned {
				return "", false
			}
			n.Cordoned = true
			return core.EventNodeCordoned, true
		})
}

// UncordonNode runs nodes.uncordon (operator only).
func (h *Handlers) UncordonNode(ctx context.Context, actor core.Actor, cmd CordonNode) (NodeResult, error) {
	return h.changeScheduling(ctx, actor, "nodes.uncordon", cmd.NodeID, cmd.IfVersion,
		func(n *db.NodeGetForUpdateRow) (string, bool) {
			if !n.Cordoned {
				return "", false
			}
			n.Cordoned = false
			return core.EventNodeUncordoned, true
		})
}

// changeScheduling is the shared body of cordon, uncordon, taint and
// untaint: lock the node, refuse a retired one (node_retired.go), let
// change edit it (returning the event type, or false when nothing changes:
// the command is then a no-op without an event), write it with a version
// guard and append the event.
func (h *Handlers) changeScheduling(ctx context.Context, actor core.Actor, command, nodeID string, ifVersion int64,
	change func(n *db.NodeGetForUpdateRow) (string, bool)) (NodeResult, error) {
	if err := requireOperator(actor, command); err != nil {
		return NodeResult{}, err
	}
	var res NodeResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		n, err := q.NodeGetForUpdate(ctx, nodeID)
		if err != nil {
			return pg.Translate(err, "node "+nodeID)
		}
		if err := refuseRetired(n.ID, n.State); err != nil {
			return err
		}
		if err := checkVersion(ifVersion, n.Version, "node "+nodeID); err != nil {
			return err
		}
		res = NodeResult{ID: n.ID, PoolID: n.PoolID, Cordoned: n.Cordoned, Taints: n.Taints, Version: n.Version}
		typ, changed := change(&n)
		if !changed {
			return nil
		}
		rows, err := q.NodeUpdateScheduling(ctx, db.NodeUpdateSchedulingParams{ID: n.ID, Version: n.Version,
			Cordoned: n.Cordoned, Taints: n.Taints})
		if err := zeroRowsConflict(rows, err, "node "+nodeID); err != nil {
			return err
		}
		if err := bumpGeneration(ctx, q, n.ID); err != nil { // a change of the node's desired spec
			return err
		}
		res = NodeResult{ID: n.ID, PoolID: n.PoolID, Cordoned: n.Cordoned, Taints: n.Taints, Version: n.Version + 1}
		res.Position, err = emit(ctx, q, typ, "", core.NodeSubject(n.ID), core.NodeSchedulingEventData{
			ID: n.ID, Cordoned: n.Cordoned, Taints: n.Taints, Version: res.Version})
		return err
	})
	if err != nil {
		return NodeResult{}, fmt.Errorf("%s %s: %w", command, nodeID, err)
	}
	return res, nil
}

// normaliseTaints sorts and deduplicates taints so that equal sets compare
// equal and events show them in one order.
func normaliseTaints(taints []string) []string {
	out := slices.Clone(taints)
	if out == nil {
		out = []string{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
