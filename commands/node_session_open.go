package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
)

// OpenNodeSession is a daemon's connection arriving at a gateway.
type OpenNodeSession struct {
	NodeID string
	// Gateway is the gateway's lease ("gateway:<id>"): the open is fenced
	// by it, so a gateway that lost its lease cannot take sessions.
	Gateway   lease.Lease
	GatewayID string
	// JournalID names the daemon's local journal. A different one than the
	// last session's means the daemon lost its memory.
	JournalID          string
	ObservedGeneration int64
	// CredentialID is the node credential the daemon authenticated with
	// (AuthenticateNodeCredential). The open fails UNAUTHENTICATED if it
	// was revoked meanwhile; the session records it, so revoking the
	// credential closes the session. Empty only for callers inside the
	// control plane.
	CredentialID string
}

// NodeSession is an open session: the epoch every later write must carry.
type NodeSession struct {
	NodeID   string
	Epoch    int64
	OpenedAt time.Time
	// PreviousJournalID is the journal of the superseded session, "" if
	// none; JournalChanged reports a daemon that came back without it.
	PreviousJournalID string
	JournalChanged    bool
}

// ErrSessionSuperseded means the session's epoch is no longer current: a
// newer session of the node exists, or this one was closed.
var ErrSessionSuperseded = core.Errorf(core.CodeConflict, "session superseded")

// OpenNodeSession supersedes the node's session with a new one at the next
// epoch and, unless the node was already connected, moves it to connected:
// it rejoins placement (the unreachable reason and NodeUnreachable are
// cleared). A retired node cannot open a session.
func (s NodeSessions) OpenNodeSession(ctx context.Context, cmd OpenNodeSession) (NodeSession, error) {
	h := s.h
	var out NodeSession
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		if err := cmd.Gateway.Fence(ctx, tx); err != nil {
			return err
		}
		q := db.New(tx)
		n, err := q.NodeLivenessLock(ctx, cmd.NodeID)
		if err != nil {
			return pg.Translate(err, "node "+cmd.NodeID)
		}
		if core.State(n.State) == core.NodeRetired {
			return core.Errorf(core.CodePermissionDenied, "node %s is retired", cmd.NodeID)
		}
		if cmd.CredentialID != "" {
			// Every revocation locks the node row first, so it either
			// committed before this check or waits for this session.
			active, err := q.NodeCredentialActive(ctx, db.NodeCredentialActiveParams{ID: cmd.CredentialID, NodeID: cmd.NodeID})
			if err != nil {
				return pg.Translate(err, "node credential")
			}
			if !active {
				return errUnknownNodeCredential
			}
		}
		if err := q.NodeSessionEnsure(ctx, cmd.NodeID); err != nil {
			return pg.Translate(err, "node session")
		}
		prev, err := q.NodeSessionGetForUpdate(ctx, cmd.NodeID)
		if err != nil {
			return pg.Translate(err, "node session")
		}
		row, err := q.NodeSessionOpen(ctx, db.NodeSessionOpenParams{NodeID: cmd.NodeID, GatewayID: cmd.GatewayID,
			GatewayEpoch: cmd.Gateway.Epoch, JournalID: cmd.JournalID, ObservedGeneration: cmd.ObservedGeneration})
		if err != nil {
			return pg.Translate(err, "node session")
		}
		out = NodeSession{NodeID: cmd.NodeID, Epoch: row.SessionEpoch, OpenedAt: row.OpenedAt}
		if cmd.CredentialID != "" {
			if err := q.NodeSessionCredentialSet(ctx, db.NodeSessionCredentialSetParams{NodeID: cmd.NodeID,
				SessionEpoch: row.SessionEpoch, CredentialID: cmd.CredentialID}); err != nil {
				return pg.Translate(err, "node session")
			}
		}
		if prev.JournalID != nil {
			out.PreviousJournalID = *prev.JournalID
			out.JournalChanged = *prev.JournalID != cmd.JournalID
		}
		// Node jobs wait for a session, and a daemon's hello may bring a
		// new generation or a new journal: wake their dispatch.
		if err := workqueue.Enqueue(ctx, q, KindNodeJobDispatch, cmd.NodeID, 0); err != nil {
			return err
		}
		// A connected node's assignments are resynced periodically (an
		// item already queued keeps its due time).
		if err := workqueue.Enqueue(ctx, q, KindNodeResync, cmd.NodeID, h.nodeResyncEvery()); err != nil {
			return err
		}
		if core.State(n.State) == core.NodeConnected {
			return nil // superseded a live session: same state, no transition
		}
		_, err = applyLiveness(ctx, q, n, livenessChange{to: core.NodeConnected, event: core.EventNodeConnected,
			dropReason: core.NoScheduleUnreachable, clear: core.ConditionNodeUnreachable,
			data: func(node core.NodeLivenessEventData) any {
				return core.NodeConnectedEventData{NodeLivenessEventData: node, SessionEpoch: row.SessionEpoch,
					GatewayID: cmd.GatewayID}
			}})
		return err
	})
	if err != nil {
		return NodeSession{}, fmt.Errorf("open session of node %s: %w", cmd.NodeID, err)
	}
	return out, nil
}
