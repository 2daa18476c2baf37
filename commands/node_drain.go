package commands

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// DrainNode keeps new bookings off a node while its reservations run to
// their end: the first of the operator's answers to a machine that may be
// gone (then ReleaseNode, RetireNode).
type DrainNode struct {
	NodeID    string
	IfVersion int64 // 0: no version check
}

// NodeLifecycleResult is a node after a lifecycle command.
type NodeLifecycleResult struct {
	ID                string          `json:"id"`
	State             string          `json:"state"`
	NoScheduleReasons []string        `json:"noScheduleReasons"`
	Version           int64           `json:"version"`
	Position          outbox.Position `json:"position"`
	// Released lists the reservations nodes.release gave back.
	Released []string `json:"released,omitempty"`
}

// DrainNode runs nodes.drain (operator only): 'draining' joins the node's
// no-schedule reasons. It updates the node row the placer locks FOR SHARE,
// so no placement commits after it on this node. Draining a drained node is
// a no-op without an event.
func (h *Handlers) DrainNode(ctx context.Context, actor core.Actor, cmd DrainNode) (NodeLifecycleResult, error) {
	return h.changeNoSchedule(ctx, actor, "nodes.drain", cmd, core.NoScheduleDraining, true, core.EventNodeDraining)
}

// UndrainNode runs nodes.undrain (operator only): lets new bookings back.
func (h *Handlers) UndrainNode(ctx context.Context, actor core.Actor, cmd DrainNode) (NodeLifecycleResult, error) {
	return h.changeNoSchedule(ctx, actor, "nodes.undrain", cmd, core.NoScheduleDraining, false, core.EventNodeUndrained)
}

func (h *Handlers) changeNoSchedule(ctx context.Context, actor core.Actor, command string, cmd DrainNode,
	reason string, add bool, event string) (NodeLifecycleResult, error) {
	if err := requireOperator(actor, command); err != nil {
		return NodeLifecycleResult{}, err
	}
	var res NodeLifecycleResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		n, err := lockNodeAt(ctx, q, cmd.NodeID, cmd.IfVersion)
		if err != nil {
			return err
		}
		res = NodeLifecycleResult{ID: n.ID, State: n.State, NoScheduleReasons: n.NoScheduleReasons, Version: n.Version}
		if slices.Contains(n.NoScheduleReasons, reason) == add {
			return nil
		}
		reasons := slices.DeleteFunc(slices.Clone(n.NoScheduleReasons), func(r string) bool { return r == reason })
		if add {
			reasons = append(reasons, reason)
		}
		if reasons == nil {
			reasons = []string{}
		}
		rows, err := q.NodeLivenessUpdate(ctx, db.NodeLivenessUpdateParams{ID: n.ID, Version: n.Version,
			State: n.State, NoScheduleReasons: reasons, Conditions: n.Conditions})
		if err := zeroRowsConflict(rows, err, "node "+n.ID); err != nil {
			return err
		}
		if err := bumpGeneration(ctx, q, n.ID); err != nil { // a change of the node's desired spec
			return err
		}
		res.NoScheduleReasons, res.Version = reasons, n.Version+1
		res.Position, err = emit(ctx, q, event, "", core.NodeSubject(n.ID), core.NodeDrainEventData{
			ID: n.ID, State: core.State(n.State), NoScheduleReasons: reasons, Version: res.Version})
		return err
	})
	if err != nil {
		return NodeLifecycleResult{}, fmt.Errorf("%s %s: %w", command, cmd.NodeID, err)
	}
	return res, nil
}

// lockNodeAt locks node id's row for a lifecycle command, refuses a retired
// node (node_retired.go: before the no-op check of drain and undrain, so an
// undrain with nothing to undo is refused like one with something) and
// checks If-Match against its version (ifVersion 0: no check).
func lockNodeAt(ctx context.Context, q *db.Queries, id string, ifVersion int64) (db.NodeLivenessLockRow, error) {
	n, err := q.NodeLivenessLock(ctx, id)
	if err != nil {
		return n, pg.Translate(err, "node "+id)
	}
	if err := refuseRetired(n.ID, n.State); err != nil {
		return n, err
	}
	return n, checkVersion(ifVersion, n.Version, "node "+id)
}
