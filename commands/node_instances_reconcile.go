package commands

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// InstanceReportGrace is how long an instance must have been running (or
// stopping) before a daemon's inventory that does not list it ends it,
// unless it changed before the session opened: an inventory is a snapshot
// taken just before it is sent, so one taken before the instance started
// may arrive after its start was recorded. A daemon takes the inventory it
// sends at each connect after its session opened, so what changed before
// is judged at once.
const InstanceReportGrace = 30 * time.Second

// lostInstanceReason is why an instance ended that its node's daemon no
// longer runs, without a report of how it ended.
const lostInstanceReason = "lost: its node's daemon no longer runs it, and did not report how it ended"

// ReconcileNodeInstances ends the instances the control plane has running
// (or stopping) on the node that its daemon's inventory, at the session
// epoch, does not list: a daemon reports each instance that stops, once;
// a report lost with its connection, or a daemon that came back without
// its state, leaves an instance the API would show running for ever. A
// running one fails (nobody asked it to stop), a stopping one is stopped,
// both with lostInstanceReason. Instances that changed since the session
// opened, within InstanceReportGrace, are left for a later inventory. It returns the ids
// it ended; a superseded session is ErrSessionSuperseded.
func (s NodeSessions) ReconcileNodeInstances(ctx context.Context, nodeID string, epoch int64, running []string) ([]string, error) {
	var lost []string
	err := pg.InTx(ctx, s.h.Pool, func(tx pgx.Tx) error {
		lost = nil
		q := db.New(tx)
		if _, err := q.NodeSessionLockForDispatch(ctx, db.NodeSessionLockForDispatchParams{NodeID: nodeID,
			SessionEpoch: epoch}); errors.Is(err, pgx.ErrNoRows) {
			return ErrSessionSuperseded
		} else if err != nil {
			return pg.Translate(err, "node session")
		}
		is, err := q.InstanceListRunningOnNode(ctx, db.InstanceListRunningOnNodeParams{NodeID: nodeID,
			MinAgeSeconds: InstanceReportGrace.Seconds()})
		if err != nil {
			return pg.Translate(err, "instances of node "+nodeID)
		}
		for _, i := range is {
			if slices.Contains(running, i.ID) {
				continue
			}
			to := core.ProvisionFailed
			if core.State(i.State) == core.ProvisionStopping {
				to = core.ProvisionStopped
			}
			if _, err := walkInstance(ctx, q, i, to, lostInstanceReason); err != nil {
				return err
			}
			lost = append(lost, i.ID)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reconcile instances of node %s at epoch %d: %w", nodeID, epoch, err)
	}
	return lost, nil
}
