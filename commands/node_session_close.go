package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// CloseNodeSession records that the daemon's connection ended closedAgo
// ago. The node becomes disconnected; nothing is released. A session
// already superseded or closed is left alone (ErrSessionSuperseded): its
// writer is a zombie.
func (s NodeSessions) CloseNodeSession(ctx context.Context, nodeID string, epoch int64, closedAgo time.Duration) error {
	h := s.h
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		n, err := q.NodeLivenessLock(ctx, nodeID)
		if err != nil {
			return pg.Translate(err, "node "+nodeID)
		}
		rows, err := q.NodeSessionClose(ctx, db.NodeSessionCloseParams{NodeID: nodeID, SessionEpoch: epoch,
			ClosedAgo: closedAgo.Seconds()})
		if err != nil {
			return pg.Translate(err, "node session")
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
