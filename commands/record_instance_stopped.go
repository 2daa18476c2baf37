package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// RecordInstanceStopped is a node daemon's report that it stopped an
// instance on its own: its allocation was unassigned, or its watchdog found
// it running outside an assignment or past its end.
type RecordInstanceStopped struct {
	// NodeID is the node whose credential the report came in under; Epoch
	// the session it came in on.
	NodeID       string
	Epoch        int64
	InstanceID   string
	AllocationID string
	Reason       string
}

// RecordInstanceStopped moves the instance to stopped through the provision
// table (requested, provisioning or running pass through stopping, one
// event each), with the daemon's reason. It is guarded by the session
// epoch like every daemon report (a report of a superseded or closed
// session is ErrSessionSuperseded: the daemon's next inventory no longer
// lists the instance), and idempotent: an instance already stopped or
// failed is left as it is. A node speaks only for itself: another node's
// instance is NOT_FOUND.
func (h *Handlers) RecordInstanceStopped(ctx context.Context, cmd RecordInstanceStopped) (core.Instance, error) {
	var out core.Instance
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		// The session at the report's epoch, FOR SHARE, as dispatch holds it.
		if _, err := q.NodeSessionLockForDispatch(ctx, db.NodeSessionLockForDispatchParams{NodeID: cmd.NodeID,
			SessionEpoch: cmd.Epoch}); errors.Is(err, pgx.ErrNoRows) {
			return ErrSessionSuperseded
		} else if err != nil {
			return pg.Translate(err, "node session")
		}
		i, err := q.InstanceGetForUpdate(ctx, cmd.InstanceID)
		if err != nil {
			return pg.Translate(err, "instance "+cmd.InstanceID)
		}
		if i.NodeID != cmd.NodeID || (cmd.AllocationID != "" && cmd.AllocationID != i.AllocationID) {
			return core.Errorf(core.CodeNotFound, "instance %s not found", cmd.InstanceID)
		}
		reason := cmd.Reason
		if reason == "" {
			reason = "stopped by its node"
		}
		if i, err = walkInstance(ctx, q, i, core.ProvisionStopped, reason); err != nil {
			return err
		}
		out, err = instanceView(i)
		return err
	})
	if err != nil {
		return core.Instance{}, fmt.Errorf("record instance %s stopped on node %s: %w", cmd.InstanceID, cmd.NodeID, err)
	}
	return out, nil
}
