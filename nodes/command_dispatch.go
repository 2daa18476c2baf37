package nodes

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/nodes/wire"
)

// KindCommandDispatch wakes the dispatch of a node's commands; its key is
// the node id. commands.run enqueues it, and so does every session open: a
// new session is when queued commands can first go out, when a daemon
// reports a new observed generation, and when a daemon that lost its
// journal must have its in-flight commands failed or re-sent.
const KindCommandDispatch = "node.command.dispatch"

// DispatchReport says what one dispatch did.
type DispatchReport struct {
	Sent    []string // queued commands sent (queued → sent)
	Resent  []string // in-flight commands sent again at this epoch
	Failed  []string // in-flight, not retry-safe, and the daemon lost its journal
	Waiting []string // queued until the daemon reports min_generation
}

// lostMemoryReason is why an in-flight command that is not retry-safe fails
// when its daemon comes back with another journal.
const lostMemoryReason = "daemon lost its memory: it came back with a new journal while the command was in flight"

// dispatchCommands sends the node's open commands to the daemon on its
// session at epoch, in one transaction that
//
//   - is fenced by the gateway's lease, and locks the session row at epoch
//     FOR SHARE (LockForDispatch): a zombie gateway, whose session was
//     superseded, gets ErrSessionSuperseded and marks nothing, and a
//     supersede waits until this transaction ends;
//   - sends a queued command only when min_generation <= the session's
//     observed_generation. Otherwise it stays queued and waits: the
//     generation is only reported in a daemon's hello, and every session
//     open wakes dispatch again, so nothing needs to poll;
//   - fails an in-flight command sent to another journal unless it is
//     retry-safe, and re-sends retry-safe ones and those sent at an older
//     epoch of the same journal (the daemon answers a repeat from its
//     journal instead of running it twice).
//
// send is called inside the transaction, so a supersede cannot slip in
// between marking and sending. If the send fails the transaction rolls
// back and the commands stay as they were; if the commit fails after a
// send, the command is sent again later and the daemon deduplicates it.
func (s *Service) dispatchCommands(ctx context.Context, gw lease.Lease, nodeID string, epoch int64,
	send func(context.Context, wire.Message) error) (DispatchReport, error) {
	var rep DispatchReport
	err := db.InTx(ctx, s.Pool, func(tx pgx.Tx) error {
		rep = DispatchReport{}
		if err := gw.Fence(ctx, tx); err != nil {
			return err
		}
		journal, err := LockForDispatch(ctx, tx, nodeID, epoch)
		if err != nil {
			return err
		}
		q := db.New(tx)
		generation, err := q.NodeCommandSessionGeneration(ctx, nodeID)
		if err != nil {
			return db.Translate(err, "node session")
		}
		open, err := q.NodeCommandListOpenForUpdate(ctx, nodeID)
		if err != nil {
			return db.Translate(err, "node commands")
		}
		for _, c := range open {
			if err := dispatchOne(ctx, q, c, epoch, journal, generation, send, &rep); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return DispatchReport{}, fmt.Errorf("dispatch commands of node %s at epoch %d: %w", nodeID, epoch, err)
	}
	return rep, nil
}

func dispatchOne(ctx context.Context, q *db.Queries, c db.NodeCommand, epoch int64, journal string, generation int64,
	send func(context.Context, wire.Message) error, rep *DispatchReport) error {
	state := core.State(c.State)
	if state == core.CommandQueued {
		if c.MinGeneration > generation {
			rep.Waiting = append(rep.Waiting, c.ID)
			return nil
		}
		if _, err := markSent(ctx, q, c, core.CommandSent, epoch, journal); err != nil {
			return err
		}
		rep.Sent = append(rep.Sent, c.ID)
		return send(ctx, commandMessage(c))
	}
	sentTo := ""
	if c.JournalID != nil {
		sentTo = *c.JournalID
	}
	switch {
	case sentTo != journal && !c.RetrySafe:
		if _, err := moveCommand(ctx, q, c, core.CommandFailed, nil, c.Output, lostMemoryReason); err != nil {
			return err
		}
		rep.Failed = append(rep.Failed, c.ID)
		return nil
	case sentTo != journal, c.DispatchedEpoch == nil || *c.DispatchedEpoch != epoch:
		if _, err := markSent(ctx, q, c, state, epoch, journal); err != nil {
			return err
		}
		rep.Resent = append(rep.Resent, c.ID)
		return send(ctx, commandMessage(c))
	}
	return nil // already sent on this session
}

// markSent records a send at epoch to journal. queued → sent is a
// transition with its event; a re-send of an in-flight command keeps its
// state and version and writes no event.
func markSent(ctx context.Context, q *db.Queries, c db.NodeCommand, to core.State, epoch int64, journal string) (db.NodeCommand, error) {
	bump := int64(0)
	if core.State(c.State) != to {
		if err := core.CheckTransition(core.CommandStateTable(), core.State(c.State), to); err != nil {
			return c, err
		}
		bump = 1
	}
	rows, err := q.NodeCommandMarkSent(ctx, db.NodeCommandMarkSentParams{State: string(to), DispatchedEpoch: epoch,
		JournalID: journal, Bump: bump, ID: c.ID, Version: c.Version})
	if err != nil {
		return c, db.Translate(err, "node command "+c.ID)
	}
	if rows == 0 {
		return c, core.Errorf(core.CodeConflict, "node command %s was changed concurrently", c.ID)
	}
	c.State, c.Version, c.DispatchedEpoch, c.JournalID = string(to), c.Version+bump, &epoch, &journal
	if bump == 0 {
		return c, nil
	}
	return c, emitCommand(ctx, q, core.EventNodeCommandSent, c, map[string]any{"sessionEpoch": epoch, "journalId": journal})
}

func commandMessage(c db.NodeCommand) wire.Message {
	return wire.Message{Type: wire.TypeCommand, CommandID: c.ID, CommandKind: c.Kind, Payload: c.Payload}
}

// Dispatch sends the node's open commands through this gateway, on the
// session it holds for the node. It fails with ErrSessionSuperseded when
// this gateway's session is no longer the node's current one.
func (g *Gateway) Dispatch(ctx context.Context, nodeID string) (DispatchReport, error) {
	g.mu.Lock()
	s, l, held := g.sessions[nodeID], g.lease, g.held
	g.mu.Unlock()
	if !held || s == nil {
		return DispatchReport{}, fmt.Errorf("gateway %s has no session of node %s: %w", g.ID, nodeID, ErrSessionSuperseded)
	}
	return g.Service.dispatchCommands(ctx, l, nodeID, s.epoch, func(ctx context.Context, m wire.Message) error {
		ctx, cancel := context.WithTimeout(ctx, sendTimeout)
		defer cancel()
		return writeJSON(ctx, s.ws, m)
	})
}

// sendTimeout bounds one write to a daemon during dispatch. The write
// happens while the session row is locked, and a daemon that stopped
// reading must not keep its own reconnect (which needs that row) waiting.
const sendTimeout = 10 * time.Second

// dispatchAgain is how soon dispatch is retried when the node's gateway is
// in this process but has not registered the session yet.
const dispatchAgain = time.Second
