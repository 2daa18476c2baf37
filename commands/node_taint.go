package commands

import (
	"context"
	"slices"
	"strings"

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

// UntaintNode runs nodes.untaint (operator only). A taint KEY=VALUE
// removes that taint; a KEY alone removes every taint of that key, with or
// without a value, as `kubectl taint KEY-` does: an operator who names the
// key of a valued taint wants it gone, and was told "changed nothing".
func (h *Handlers) UntaintNode(ctx context.Context, actor core.Actor, cmd TaintNode) (NodeResult, error) {
	return h.changeScheduling(ctx, actor, "nodes.untaint", cmd.NodeID, cmd.IfVersion,
		func(n *db.NodeGetForUpdateRow) (string, bool) {
			kept := slices.DeleteFunc(slices.Clone(n.Taints), func(t string) bool {
				return t == cmd.Taint || (!strings.Contains(cmd.Taint, "=") && strings.HasPrefix(t, cmd.Taint+"="))
			})
			if len(kept) == len(n.Taints) {
				return "", false
			}
			n.Taints = kept
			return core.EventNodeUntainted, true
		})
}
