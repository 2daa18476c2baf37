package nodes

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/nodes/wire"
	"github.com/bettercompute/compute/outbox"
)

// maxCommandOutput bounds the output stored with a command: a daemon
// printing gigabytes must not fill the database.
const maxCommandOutput = 64 << 10

// commandEvents maps the states a command can be moved to here onto their
// events.
var commandEvents = map[core.State]string{
	core.CommandSent:      core.EventNodeCommandSent,
	core.CommandRunning:   core.EventNodeCommandRunning,
	core.CommandSucceeded: core.EventNodeCommandSucceeded,
	core.CommandFailed:    core.EventNodeCommandFailed,
}

// RecordCommandResult stores what a node's daemon reported about one of
// its commands. A node speaks only for itself: a command of another node
// is NOT_FOUND. Reports are at least once, so a repeat (same state) or a
// report after the command ended (a late result after it was failed for a
// lost journal) changes nothing. A report that skips states (succeeded
// while the command is still sent, because the running report was lost
// with its session) walks the state table through the states between,
// one event each.
func (s *Service) RecordCommandResult(ctx context.Context, nodeID string, m wire.Message) error {
	to := core.State(m.State)
	if commandEvents[to] == "" || to == core.CommandSent {
		return core.Errorf(core.CodeInvalidArgument, "a daemon cannot report a command as %q", m.State)
	}
	output := m.Output
	if len(output) > maxCommandOutput {
		output = output[len(output)-maxCommandOutput:] // the end says why it failed
	}
	err := db.InTx(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		c, err := q.NodeCommandGetForUpdate(ctx, m.CommandID)
		if err != nil {
			return db.Translate(err, "command "+m.CommandID)
		}
		if c.NodeID != nodeID {
			return core.Errorf(core.CodeNotFound, "command %s not found", m.CommandID)
		}
		table := core.CommandStateTable()
		for _, step := range core.StatePath(table, core.State(c.State), to) {
			exit, out, reason := c.ExitCode, c.Output, c.Reason
			if step == to {
				exit, out, reason = m.ExitCode, output, m.Reason
			}
			if c, err = moveCommand(ctx, q, c, step, exit, out, reason); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record result of command %s from node %s: %w", m.CommandID, nodeID, err)
	}
	return nil
}

// moveCommand moves a locked command to state to with a version guard and
// appends its event.
func moveCommand(ctx context.Context, q *db.Queries, c db.NodeCommand, to core.State, exit *int32, output, reason string) (db.NodeCommand, error) {
	table := core.CommandStateTable()
	if err := core.CheckTransition(table, core.State(c.State), to); err != nil {
		return c, err
	}
	rows, err := q.NodeCommandFinish(ctx, db.NodeCommandFinishParams{State: string(to), ExitCode: exit, Output: output,
		Reason: reason, Terminal: table.Terminal[to], ID: c.ID, Version: c.Version})
	if err != nil {
		return c, db.Translate(err, "node command "+c.ID)
	}
	if rows == 0 {
		return c, core.Errorf(core.CodeConflict, "node command %s was changed concurrently", c.ID)
	}
	c.State, c.ExitCode, c.Output, c.Reason, c.Version = string(to), exit, output, reason, c.Version+1
	if err := emitCommand(ctx, q, commandEvents[to], c, nil); err != nil {
		return c, err
	}
	return c, followInstance(ctx, q, c)
}

// emitCommand appends a command's event, to its tenant, carrying the
// command as it is now (with its new version) plus extra.
func emitCommand(ctx context.Context, q *db.Queries, typ string, c db.NodeCommand, extra map[string]any) error {
	view, err := c.Core()
	if err != nil {
		return err
	}
	data := view.EventData()
	for k, v := range extra {
		data[k] = v
	}
	ev, err := core.NewEvent(typ, c.TenantID, core.NodeCommandSubject(c.ID), data)
	if err != nil {
		return fmt.Errorf("build %s event: %w", typ, err)
	}
	_, err = outbox.Append(ctx, q, ev)
	return err
}
