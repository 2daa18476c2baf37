package nodes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/workqueue"
)

// OpenSession is a daemon's connection arriving at a gateway.
type OpenSession struct {
	NodeID string
	// Gateway is the gateway's lease ("gateway:<id>"): the open is fenced
	// by it, so a gateway that lost its lease cannot take sessions.
	Gateway   lease.Lease
	GatewayID string
	// JournalID names the daemon's local journal. A different one than the
	// last session's means the daemon lost its memory.
	JournalID          string
	ObservedGeneration int64
}

// Session is an open session: the epoch every later write must carry.
type Session struct {
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

// OpenSession supersedes the node's session with a new one at the next
// epoch and, unless the node was already connected, moves it to connected:
// it rejoins placement (the unreachable reason and NodeUnreachable are
// cleared). A retired node cannot open a session.
func (s *Service) OpenSession(ctx context.Context, cmd OpenSession) (Session, error) {
	var out Session
	err := db.InTx(ctx, s.Pool, func(tx pgx.Tx) error {
		if err := cmd.Gateway.Fence(ctx, tx); err != nil {
			return err
		}
		q := db.New(tx)
		n, err := q.NodeLivenessLock(ctx, cmd.NodeID)
		if err != nil {
			return db.Translate(err, "node "+cmd.NodeID)
		}
		if core.State(n.State) == core.NodeRetired {
			return core.Errorf(core.CodePermissionDenied, "node %s is retired", cmd.NodeID)
		}
		if err := q.NodeSessionEnsure(ctx, cmd.NodeID); err != nil {
			return db.Translate(err, "node session")
		}
		prev, err := q.NodeSessionGetForUpdate(ctx, cmd.NodeID)
		if err != nil {
			return db.Translate(err, "node session")
		}
		row, err := q.NodeSessionOpen(ctx, db.NodeSessionOpenParams{NodeID: cmd.NodeID, GatewayID: cmd.GatewayID,
			GatewayEpoch: cmd.Gateway.Epoch, JournalID: cmd.JournalID, ObservedGeneration: cmd.ObservedGeneration})
		if err != nil {
			return db.Translate(err, "node session")
		}
		out = Session{NodeID: cmd.NodeID, Epoch: row.SessionEpoch, OpenedAt: row.OpenedAt}
		if prev.JournalID != nil {
			out.PreviousJournalID = *prev.JournalID
			out.JournalChanged = *prev.JournalID != cmd.JournalID
		}
		// Commands wait for a session, and a daemon's hello may bring a new
		// generation or a new journal: wake their dispatch.
		if err := workqueue.Enqueue(ctx, q, KindCommandDispatch, cmd.NodeID, 0); err != nil {
			return err
		}
		if core.State(n.State) == core.NodeConnected {
			return nil // superseded a live session: same state, no transition
		}
		_, err = apply(ctx, q, n, change{to: core.NodeConnected, event: core.EventNodeConnected,
			dropReason: core.NoScheduleUnreachable, clear: core.ConditionNodeUnreachable,
			data: map[string]any{"sessionEpoch": row.SessionEpoch, "gatewayId": cmd.GatewayID}})
		return err
	})
	if err != nil {
		return Session{}, fmt.Errorf("open session of node %s: %w", cmd.NodeID, err)
	}
	return out, nil
}

// SeenAge is one session's liveness as a gateway reports it: how long ago
// the daemon was last heard from, by the gateway's monotonic clock.
type SeenAge struct {
	NodeID string
	Epoch  int64
	Age    time.Duration
}

// FlushLiveness records a gateway's liveness ages in one statement, fenced
// by the gateway's lease. The database computes last_seen_at as
// compute_now() - age; sessions whose epoch moved on (or that another
// gateway now holds) are left untouched. It returns the nodes it touched:
// a gateway drops from its cache any session not among them.
func (s *Service) FlushLiveness(ctx context.Context, gw lease.Lease, gatewayID string, seen []SeenAge) ([]string, error) {
	if len(seen) == 0 {
		return nil, nil
	}
	p := db.NodeSessionTouchParams{GatewayID: gatewayID}
	for _, x := range seen {
		p.NodeIds = append(p.NodeIds, x.NodeID)
		p.Epochs = append(p.Epochs, x.Epoch)
		p.Ages = append(p.Ages, x.Age.Seconds())
	}
	var touched []string
	err := db.InTx(ctx, s.Pool, func(tx pgx.Tx) error {
		if err := gw.Fence(ctx, tx); err != nil {
			return err
		}
		var err error
		touched, err = db.New(tx).NodeSessionTouch(ctx, p)
		return db.Translate(err, "node sessions")
	})
	if err != nil {
		return nil, fmt.Errorf("flush liveness of gateway %s: %w", gatewayID, err)
	}
	return touched, nil
}

// CloseSession records that the daemon's connection ended closedAgo ago.
// The node becomes disconnected; nothing is released. A session already
// superseded or closed is left alone (ErrSessionSuperseded): its writer is
// a zombie.
func (s *Service) CloseSession(ctx context.Context, nodeID string, epoch int64, closedAgo time.Duration) error {
	err := db.InTx(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		n, err := q.NodeLivenessLock(ctx, nodeID)
		if err != nil {
			return db.Translate(err, "node "+nodeID)
		}
		rows, err := q.NodeSessionClose(ctx, db.NodeSessionCloseParams{NodeID: nodeID, SessionEpoch: epoch,
			ClosedAgo: closedAgo.Seconds()})
		if err != nil {
			return db.Translate(err, "node session")
		}
		if rows == 0 {
			return ErrSessionSuperseded
		}
		return disconnect(ctx, q, n, "closed", epoch, NoSessionAfter)
	})
	if err != nil {
		return fmt.Errorf("close session %d of node %s: %w", epoch, nodeID, err)
	}
	return nil
}

// markGatewayLost ends a session whose gateway lost its lease at lostAt,
// with the gateway-lost grace (or the outage grace after an outage).
func (s *Service) markGatewayLost(ctx context.Context, nodeID string, epoch int64, lostAt time.Time, outage bool) error {
	grace, reason, wait := "gateway-lost", "gateway-lost", NoSessionAfter+GatewayLostGrace
	if outage {
		grace, wait = "outage", NoSessionAfter+OutageGrace
	}
	err := db.InTx(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		n, err := q.NodeLivenessLock(ctx, nodeID)
		if err != nil {
			return db.Translate(err, "node "+nodeID)
		}
		if outage {
			if lostAt, err = q.NodeLivenessNow(ctx); err != nil {
				return db.Translate(err, "clock")
			}
		}
		rows, err := q.NodeSessionGatewayLost(ctx, db.NodeSessionGatewayLostParams{NodeID: nodeID,
			SessionEpoch: epoch, LostAt: lostAt, GraceReason: grace})
		if err != nil || rows == 0 {
			return db.Translate(err, "node session") // 0 rows: reconnected meanwhile
		}
		return disconnect(ctx, q, n, reason, epoch, wait)
	})
	if err != nil {
		return fmt.Errorf("gateway lost for node %s: %w", nodeID, err)
	}
	return nil
}

// disconnect moves a connected node to disconnected and wakes the liveness
// reconciler when its unreachable threshold can first be due.
func disconnect(ctx context.Context, q *db.Queries, n db.NodeLivenessLockRow, reason string, epoch int64, wait time.Duration) error {
	if core.State(n.State) != core.NodeConnected {
		return nil // e.g. retired meanwhile: the session row alone changes
	}
	if _, err := apply(ctx, q, n, change{to: core.NodeDisconnected, event: core.EventNodeDisconnected,
		data: map[string]any{"reason": reason, "sessionEpoch": epoch}}); err != nil {
		return err
	}
	return workqueue.Enqueue(ctx, q, KindLiveness, n.ID, wait)
}

// LockForDispatch locks the node's session row at epoch inside tx, the
// transaction that marks something as sent to the daemon. It fails with
// ErrSessionSuperseded when the epoch is no longer the node's current
// connected session, and otherwise returns the session's journal id.
func LockForDispatch(ctx context.Context, tx pgx.Tx, nodeID string, epoch int64) (string, error) {
	row, err := db.New(tx).NodeSessionLockForDispatch(ctx, db.NodeSessionLockForDispatchParams{
		NodeID: nodeID, SessionEpoch: epoch})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrSessionSuperseded
	}
	if err != nil {
		return "", db.Translate(err, "node session")
	}
	return row.JournalID, nil
}
