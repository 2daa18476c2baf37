package commands

import (
	"context"
	"slices"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// TaintNode adds (taint) or removes (untaint) one NoSchedule taint. A
// reservation may be placed on a tainted node only if it tolerates every
// taint of the node.
type TaintNode struct {
	NodeID    string
	Taint     string
	IfVersion int64 // 0: no version check
}

// TaintNode runs nodes.taint (operator only).
func (h *Handlers) TaintNode(ctx context.Context, actor core.Actor, cmd TaintNode) (NodeResult, error) {
	if cmd.Taint == "" {
		return NodeResult{}, core.Errorf(core.CodeInvalidArgument, "taint must not be empty")
	}
	return h.changeScheduling(ctx, actor, "nodes.taint", cmd.NodeID, cmd.IfVersion,
		func(n *db.NodeGetForUpdateRow) (string, bool) {
			if slices.Contains(n.Taints, cmd.Taint) {
				return "", false
			}
			n.Taints = normaliseTaints(append(slices.Clone(n.Taints), cmd.Taint))
			return core.EventNodeTainted, true
		})
}

// UntaintNode runs nodes.untaint (operator only).
func (h *Handlers) UntaintNode(ctx context.Context, actor core.Actor, cmd TaintNode) (NodeResult, error) {
	return h.changeScheduling(ctx, actor, "nodes.untaint", cmd.NodeID, cmd.IfVersion,
		func(n *db.NodeGetForUpdateRow) (string, bool) {
			i := slices.Index(n.Taints, cmd.Taint)
			if i < 0 {
				return "", false
			}
			n.Taints = slices.Delete(slices.Clone(n.Taints), i, i+1)
			return core.EventNodeUntainted, true
		})
}
