package commands

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// A shrink of a node's vCPU, memory or disk that its daemon reported while
// the node's bookings held more is not forgotten: it stays pending
// (node_resources.pending_allocatable) and the placer books new
// reservations against it already. Once the bookings that blocked it end,
// nothing else would adopt it (the daemon reports its scalars only at a
// (re)connect), so the node's periodic resync retries it. A release does
// not: it is the write path's hottest statement sequence, and a shrink
// that waits up to one resync period (Config.NodeResyncEvery) costs
// nothing, since new bookings already honour it.

// ScalarsRetry says what one retry of a node's pending shrinks adopted.
type ScalarsRetry struct {
	// Adopted are the shrinks adopted ("vcpu 64 → 4"); empty when none
	// fitted, and then nothing was written.
	Adopted []string
	// Version is the node's new version and Position that of its
	// node.inventory_reconciled, when Adopted is not empty.
	Version  int64
	Position outbox.Position
}

// retryPendingScalars adopts each shrink pending on the node that every
// live and future booking on it fits now, with the inventory's own guarded
// update (NodeResourceSetAllocatable: the database decides), and moves the
// pool's capacity rollup by the change. It then writes the node's
// ScalarsMismatch condition without the adopted resources (cleared when
// nothing else is refused) and its version, and appends
// node.inventory_reconciled with the node's scalars and session epoch 0:
// no report made it. A shrink that still does not fit stays pending and
// writes nothing. A look without locks comes first, so that a node with
// nothing to adopt (nearly all of them, at every resync) costs one read.
// fence, when set, is the first statement of its transaction.
func (h *Handlers) retryPendingScalars(ctx context.Context, nodeID string, fence func(pgx.Tx) error) (ScalarsRetry, error) {
	var res ScalarsRetry
	fits, err := db.New(h.Pool).NodeResourcePendingFits(ctx, nodeID)
	if err != nil {
		return res, fmt.Errorf("pending scalars of node %s: %w", nodeID, pg.Translate(err, "node resources"))
	}
	if !fits {
		return res, nil
	}
	err = pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		res = ScalarsRetry{}
		if err := fenced(tx, fence); err != nil {
			return err
		}
		q := db.New(tx)
		// Lock order: the node row, then its counters, then the rollup.
		n, err := q.NodeLivenessLock(ctx, nodeID)
		if err != nil {
			return pg.Translate(err, "node "+nodeID)
		}
		now, err := q.NodeLivenessNow(ctx)
		if err != nil {
			return pg.Translate(err, "clock")
		}
		rows, err := q.NodeResourceListForUpdate(ctx, nodeID)
		if err != nil {
			return pg.Translate(err, "scalars of node "+nodeID)
		}
		scalars, err := applyScalars(ctx, q, nodeID, n.PoolID, rows, pendingOf(rows))
		if err != nil || len(scalars.adopted) == 0 {
			return err // nothing fits any more: nothing written
		}
		conds, err := decodeNodeConditions(n)
		if err != nil {
			return err
		}
		next := setNodeCondition(conds, core.ConditionScalarsMismatch, scalars.reason, scalars.message(), now)
		reasons, err := writeNodeConditions(ctx, q, n, next)
		if err != nil {
			return err
		}
		res.Adopted, res.Version = scalars.adopted, n.Version+1
		res.Position, err = emit(ctx, q, core.EventNodeInventoryReconciled, "", core.NodeSubject(n.ID),
			core.NodeInventoryReconciledEventData{ID: n.ID, PoolID: n.PoolID, State: core.State(n.State),
				NoScheduleReasons: reasons, Conditions: next, Version: res.Version, Missing: []string{},
				Returned: []string{}, Registered: []string{}, Mismatched: []string{}, Scalars: &scalars.after,
				PendingScalars: &scalars.pending})
		return err
	})
	if err != nil {
		return ScalarsRetry{}, fmt.Errorf("pending scalars of node %s: %w", nodeID, err)
	}
	return res, nil
}

// pendingOf is what the locked counters remember of the last report's
// refusals, as the report that stated them: each resource's pending
// shrink, retried, else the value out of range that it stated, refused
// again (so that the ScalarsMismatch condition keeps it, from the record
// and not from its own words).
func pendingOf(rows []db.NodeResourceListForUpdateRow) ReportedScalars {
	var rep ReportedScalars
	for _, r := range rows {
		v := r.PendingAllocatable
		if v == nil {
			v = r.ReportedOutOfRange
		}
		switch r.Resource {
		case core.ResourceVCPU:
			rep.VCPU = v
		case core.ResourceMemory:
			rep.MemoryMB = v
		case core.ResourceDisk:
			rep.DiskGB = v
		}
	}
	return rep
}
