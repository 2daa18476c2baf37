package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/wire"
)

// maxInstanceStopReason bounds the reason a daemon gives for an instance it
// stopped: the instance, each of its events and the tenant's webhooks carry
// it, and a daemon's text is not trusted to be short (a message may be 4
// MiB).
const maxInstanceStopReason = 1 << 10

// RecordInstanceStopped is a node daemon's report that an instance ended
// without being asked to: it stopped it (its allocation was unassigned, or
// its watchdog found it running outside an assignment or past its end), or
// its process exited on its own (Exited, with ExitCode).
type RecordInstanceStopped struct {
	// NodeID is the node whose credential the report came in under; Epoch
	// the session it came in on.
	NodeID       string
	Epoch        int64
	InstanceID   string
	AllocationID string
	Reason       string
	// Exited says the process ended on its own; ExitCode is then its exit
	// status (128+n for signal n), and Reason is wire.ReasonOOMKilled when
	// the kernel's OOM killer ended it.
	Exited   bool
	ExitCode *int32
}

// RecordInstanceStopped moves the instance to where the report says,
// through the provision table, one event per step:
//
//   - stopped by its daemon: to stopped (requested, provisioning or running
//     pass through stopping), with the daemon's reason (NUL and invalid
//     UTF-8 made U+FFFD, cut to maxInstanceStopReason);
//   - exited with status 0: to succeeded;
//   - exited otherwise: to failed, reason "exit status N", or "OOMKilled"
//     when the OOM killer ended it; exited without a status: to failed,
//     with the daemon's reason (cut as above), "exited without a status"
//     when it gave none.
//
// An exit code is stored on the instance and shown in its events. The
// report is guarded by the session epoch like every daemon report (a
// report of a superseded or closed session is ErrSessionSuperseded: the
// daemon's next inventory no longer lists the instance), and idempotent:
// an instance that already ended (or, for an exit, is stopping) is left as
// it is. A node speaks only for itself: another node's instance is
// NOT_FOUND.
func (s NodeSessions) RecordInstanceStopped(ctx context.Context, cmd RecordInstanceStopped) (core.Instance, error) {
	h := s.h
	if err := reportedID("n instance's", cmd.InstanceID); err != nil {
		return core.Instance{}, err
	}
	if cmd.AllocationID != "" {
		if err := reportedID("n allocation's", cmd.AllocationID); err != nil {
			return core.Instance{}, err
		}
	}
	// Storable first: text PostgreSQL refuses (NUL, invalid UTF-8) would
	// fail the report and leave the instance running until an inventory.
	cmd.Reason = storableText(cmd.Reason, maxInstanceStopReason, false)
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
		to, reason, exit := cmd.outcome()
		steps := core.StatePath(core.ProvisionStateTable(), core.State(i.State), to)
		if cmd.Exited && core.State(i.State) == core.ProvisionStopping {
			steps = nil // asked to stop: the stop's own result ends it
		}
		for _, step := range steps {
			why := ""
			if step == to { // the exit code goes with the last step only
				why, i.ExitCode = reason, exit
			}
			if i, _, err = moveInstance(ctx, q, i, step, why); err != nil {
				return err
			}
		}
		out, err = instanceView(i)
		return err
	})
	if err != nil {
		return core.Instance{}, fmt.Errorf("record instance %s stopped on node %s: %w", cmd.InstanceID, cmd.NodeID, err)
	}
	return out, nil
}

// outcome is the state the report ends the instance in, the reason, and
// the exit code to record (nil when the daemon stopped it).
func (cmd RecordInstanceStopped) outcome() (core.State, string, *int32) {
	switch {
	case !cmd.Exited:
		if cmd.Reason == "" {
			return core.ProvisionStopped, "stopped by its node", nil
		}
		return core.ProvisionStopped, cmd.Reason, nil
	case cmd.Reason == wire.ReasonOOMKilled:
		return core.ProvisionFailed, wire.ReasonOOMKilled, cmd.ExitCode
	case cmd.ExitCode == nil && cmd.Reason != "":
		// The daemon says why it has no status (adopted_exit.go's reason:
		// it exited after the daemon restarted).
		return core.ProvisionFailed, cmd.Reason, nil
	case cmd.ExitCode == nil:
		return core.ProvisionFailed, "exited without a status", nil
	case *cmd.ExitCode == 0:
		return core.ProvisionSucceeded, "exit status 0", cmd.ExitCode
	}
	return core.ProvisionFailed, fmt.Sprintf("exit status %d", *cmd.ExitCode), cmd.ExitCode
}
