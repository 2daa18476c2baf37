package commands

import (
	"context"
	"fmt"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// moveInstance moves a locked instance to state to, checked against the
// provision state table, with a version guard, and appends its event (to
// the instance's tenant, carrying the new version). i.ExitCode, when set,
// is written with it (an instance whose process exited). instances.create and
// instances.delete use it as well as the daemon's reports, so that every
// instance transition is written the same way.
func moveInstance(ctx context.Context, q *db.Queries, i db.Instance, to core.State, reason string) (db.Instance, outbox.Position, error) {
	if err := core.CheckTransition(core.ProvisionStateTable(), core.State(i.State), to); err != nil {
		return i, outbox.Position{}, err
	}
	rows, err := q.InstanceUpdateState(ctx, db.InstanceUpdateStateParams{State: string(to), Reason: reason,
		ExitCode: i.ExitCode, ID: i.ID, Version: i.Version})
	if err != nil {
		return i, outbox.Position{}, pg.Translate(err, "instance "+i.ID)
	}
	if rows == 0 {
		return i, outbox.Position{}, core.Errorf(core.CodeConflict, "instance %s was changed concurrently", i.ID)
	}
	i.State, i.Reason, i.Version = string(to), reason, i.Version+1
	pos, err := appendInstanceEvent(ctx, q, i)
	return i, pos, err
}

// appendInstanceEvent appends the event of entering the instance's current
// state, with the instance as it is now.
func appendInstanceEvent(ctx context.Context, q *db.Queries, i db.Instance) (outbox.Position, error) {
	view, err := instanceView(i)
	if err != nil {
		return outbox.Position{}, err
	}
	typ := core.InstanceEvents()[core.State(i.State)]
	pos, err := emit(ctx, q, typ, i.TenantID, core.InstanceSubject(i.ID), view)
	if err != nil {
		return outbox.Position{}, fmt.Errorf("append %s event: %w", typ, err)
	}
	return pos, nil
}

// followInstance carries a node job's new state over to the instance it
// carries out. A start that runs means provisioning, one that succeeded
// (the workload started) means running; a stop that succeeded means
// stopped; either failing, or timing out (NodeJobTimeout), fails the
// instance. The provision table decides what is still possible: a start
// reporting after a delete asked for a stop changes nothing.
func followInstance(ctx context.Context, q *db.Queries, c db.NodeCommand) error {
	if c.InstanceID == nil {
		return nil
	}
	var want core.State
	switch {
	case core.State(c.State) == core.CommandFailed, core.State(c.State) == core.CommandTimedOut:
		want = core.ProvisionFailed
	case c.Kind == core.NodeCommandInstanceStart && core.State(c.State) == core.CommandRunning:
		want = core.ProvisionProvisioning
	case c.Kind == core.NodeCommandInstanceStart && core.State(c.State) == core.CommandSucceeded:
		want = core.ProvisionRunning
	case c.Kind == core.NodeCommandInstanceStop && core.State(c.State) == core.CommandSucceeded:
		want = core.ProvisionStopped
	default:
		return nil
	}
	i, err := q.InstanceGetForUpdate(ctx, *c.InstanceID)
	if err != nil {
		return pg.Translate(err, "instance "+*c.InstanceID)
	}
	for _, step := range core.StatePath(core.ProvisionStateTable(), core.State(i.State), want) {
		reason := ""
		if step == core.ProvisionFailed {
			verb := "failed"
			if core.State(c.State) == core.CommandTimedOut {
				verb = "timed out"
			}
			reason = fmt.Sprintf("%s %s %s: %s", c.Kind, c.ID, verb, c.Reason)
		}
		if i, _, err = moveInstance(ctx, q, i, step, reason); err != nil {
			return err
		}
	}
	return nil
}
