package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/wire"
)

// maxNodeJobOutput bounds the output stored with a node job: a daemon
// printing gigabytes must not fill the database. maxNodeJobReason bounds
// its reason, which a tenant may see as a condition's message.
const (
	maxNodeJobOutput = 64 << 10
	maxNodeJobReason = 1 << 10
)

// nodeJobEvents maps the states a node job can be moved to by dispatch and
// by its daemon's reports onto their node_command.* events (an assign or
// unassign writes node_assignment.* instead: core.NodeJobEvent).
var nodeJobEvents = map[core.State]string{
	core.CommandSent:      core.EventNodeCommandSent,
	core.CommandRunning:   core.EventNodeCommandRunning,
	core.CommandSucceeded: core.EventNodeCommandSucceeded,
	core.CommandFailed:    core.EventNodeCommandFailed,
}

// RecordNodeJobResult is what a node's daemon reported about one of its
// node jobs: its state (running, succeeded, failed), exit code and output.
type RecordNodeJobResult struct {
	// NodeID is the node whose credential the report came in under.
	NodeID string
	// Epoch is the session epoch the report came in on: only a report of
	// the node's current, connected session is recorded.
	Epoch    int64
	JobID    string
	State    string
	ExitCode *int32
	Output   string
	Reason   string
	// ObservedGeneration is the generation the daemon reports having
	// applied (on the results of assign and unassign jobs).
	ObservedGeneration int64
}

// RecordNodeJobResult stores what a node's daemon reported about one of
// its node jobs. A node speaks only for itself: a job of another node is
// NOT_FOUND. A report speaks only for its session: one that came in on a
// session that is no longer the node's connected one (superseded by a
// newer session, closed, or fenced by the revocation of its credential)
// is ErrSessionSuperseded and changes nothing, so that a revoked
// credential's connection cannot conclude jobs (or fail reservations) in
// the moments before its gateway drops it; the job is still in flight and
// is sent again on the node's next session, where the daemon answers from
// its journal. Reports are at least once, so a repeat (same state) or a
// report after the job ended (a late result after it was failed for a lost
// journal) changes nothing. A report that skips states (succeeded while the
// job is still sent, because the running report was lost with its session)
// walks the state table through the states between, one event each.
func (s NodeSessions) RecordNodeJobResult(ctx context.Context, cmd RecordNodeJobResult) error {
	h := s.h
	to := core.State(cmd.State)
	if nodeJobEvents[to] == "" || to == core.CommandSent {
		return core.Errorf(core.CodeInvalidArgument, "a daemon cannot report a command as %q", core.Clip(cmd.State, 64))
	}
	if err := reportedID(" node job's", cmd.JobID); err != nil {
		return err
	}
	output := storableText(cmd.Output, maxNodeJobOutput, true) // the end says why it failed
	cmd.Reason = storableText(cmd.Reason, maxNodeJobReason, false)
	var err error
	// A result that fails a reservation races with the reservation's own
	// end (a release): the loser's version guard is CONFLICT, and the
	// result is recorded again against what the winner left.
	for attempt := 0; attempt < 3; attempt++ {
		err = pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error { return recordNodeJobResult(ctx, tx, cmd, to, output) })
		if errors.Is(err, ErrSessionSuperseded) || core.CodeOf(err) != core.CodeConflict {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("record result of command %s from node %s: %w", cmd.JobID, cmd.NodeID, err)
	}
	return nil
}

func recordNodeJobResult(ctx context.Context, tx pgx.Tx, cmd RecordNodeJobResult, to core.State, output string) error {
	q := db.New(tx)
	peek, err := q.NodeCommandGet(ctx, cmd.JobID)
	if err != nil {
		return pg.Translate(err, "command "+cmd.JobID)
	}
	if peek.NodeID != cmd.NodeID {
		return core.Errorf(core.CodeNotFound, "command %s not found", cmd.JobID)
	}
	// The session first, at the report's epoch, as dispatch locks it
	// (session, then jobs): no row, or not connected, is a report of a
	// session that is no longer the node's. An assignment's result also
	// moves the session's observed generation, so it locks the row FOR
	// UPDATE before it checks it (FOR SHARE, on a row it holds).
	assignment := peek.Kind == core.NodeCommandAssign || peek.Kind == core.NodeCommandUnassign
	if assignment {
		_, err := q.NodeSessionLockAtEpoch(ctx, db.NodeSessionLockAtEpochParams{NodeID: cmd.NodeID, SessionEpoch: cmd.Epoch})
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrSessionSuperseded
		}
		if err != nil {
			return pg.Translate(err, "node session")
		}
	}
	_, err = q.NodeSessionLockForDispatch(ctx, db.NodeSessionLockForDispatchParams{NodeID: cmd.NodeID, SessionEpoch: cmd.Epoch})
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrSessionSuperseded
	}
	if err != nil {
		return pg.Translate(err, "node session")
	}
	c, err := q.NodeCommandGetForUpdate(ctx, cmd.JobID)
	if err != nil {
		return pg.Translate(err, "command "+cmd.JobID)
	}
	from := core.State(c.State)
	table := core.CommandStateTable()
	for _, step := range core.StatePath(table, from, to) {
		exit, out, reason := c.ExitCode, c.Output, c.Reason
		if step == to {
			exit, out, reason = cmd.ExitCode, output, cmd.Reason
		}
		if c, err = moveNodeJob(ctx, q, c, step, exit, out, reason); err != nil {
			return err
		}
	}
	if !assignment {
		return nil
	}
	concluded := core.State(c.State) != from && table.Terminal[core.State(c.State)]
	if concluded {
		if err := followAssignment(ctx, tx, c); err != nil {
			return err
		}
	}
	if err := raiseObserved(ctx, q, cmd.NodeID, cmd.Epoch, cmd.ObservedGeneration); err != nil {
		return err
	}
	if concluded {
		// The node's next assignment job may have waited for this one.
		return workqueue.Enqueue(ctx, q, KindNodeJobDispatch, cmd.NodeID, 0)
	}
	return nil
}

// followAssignment carries a concluded assign or unassign over to what it
// assigned. An assign that failed for good fails its reservation
// (failAssignedReservation); an unassign that succeeded means the daemon
// stopped every workload of the allocation before it answered, so its
// instances on that node that are still stopping (or never started) are
// stopped; instances on any other node are not the daemon's to speak for.
func followAssignment(ctx context.Context, tx pgx.Tx, c db.NodeCommand) error {
	q := db.New(tx)
	switch {
	case c.Kind == core.NodeCommandAssign && core.State(c.State) == core.CommandFailed:
		kind, fails := assignFailure(c.Reason)
		if !fails {
			return nil
		}
		return failAssignedReservation(ctx, tx, c, kind, c.Reason)
	case c.Kind == core.NodeCommandUnassign && core.State(c.State) == core.CommandSucceeded && c.AllocationID != nil:
		var p wire.UnassignPayload
		if err := json.Unmarshal(c.Payload, &p); err != nil {
			return fmt.Errorf("unassign %s: payload: %w", c.ID, err)
		}
		return moveUnfinishedInstances(ctx, q, c.NodeID, *c.AllocationID, core.ProvisionStopped, p.StopReason())
	}
	return nil
}

// moveNodeJob moves a locked node job to state to with a version guard,
// appends its event, and carries the new state over to the instance the
// job carries out, if any.
func moveNodeJob(ctx context.Context, q *db.Queries, c db.NodeCommand, to core.State, exit *int32, output, reason string) (db.NodeCommand, error) {
	table := core.CommandStateTable()
	if err := core.CheckTransition(table, core.State(c.State), to); err != nil {
		return c, err
	}
	rows, err := q.NodeCommandFinish(ctx, db.NodeCommandFinishParams{State: string(to), ExitCode: exit, Output: output,
		Reason: reason, Terminal: table.Terminal[to], ID: c.ID, Version: c.Version})
	if err != nil {
		return c, pg.Translate(err, "node command "+c.ID)
	}
	if rows == 0 {
		return c, core.Errorf(core.CodeConflict, "node command %s was changed concurrently", c.ID)
	}
	c.State, c.ExitCode, c.Output, c.Reason, c.Version = string(to), exit, output, reason, c.Version+1
	if err := emitNodeJob(ctx, q, to, c, nil); err != nil { // the job itself is the data
		return c, err
	}
	return c, followInstance(ctx, q, c)
}

// emitNodeJob appends the event of a node job entering state to, carrying
// the job as it is now (with its new version), or what data makes of it
// when the event adds to it (nil: the job itself): node_command.* to the
// job's tenant, or node_assignment.* (fleet-wide) for an assign or
// unassign (core.NodeJobEvent).
func emitNodeJob(ctx context.Context, q *db.Queries, to core.State, c db.NodeCommand, data func(job core.NodeCommand) any) error {
	view, err := nodeCommandView(c)
	if err != nil {
		return err
	}
	var payload any = view
	if data != nil {
		payload = data(view)
	}
	typ, tenant := core.NodeJobEvent(c.Kind, to, c.TenantID)
	if _, err := emit(ctx, q, typ, tenant, core.NodeCommandSubject(c.ID), payload); err != nil {
		return fmt.Errorf("append %s event: %w", typ, err)
	}
	return nil
}

// storableText is text a daemon reported, made fit for a text column: NUL
// bytes and invalid UTF-8 (a workload prints what it likes, and an output
// cut at a byte offset may split a character) become U+FFFD, because
// PostgreSQL refuses both and a result it refuses would leave its job
// running for good; then it is cut to at most max bytes at a character
// boundary, keeping its end or its start.
func storableText(s string, max int, keepEnd bool) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	if len(s) <= max {
		return s
	}
	if keepEnd {
		i := len(s) - max
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		return s[i:]
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}
