package commands

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
)

// NodeCredentialGrace is the KindNodeCredentialGrace work-queue
// handler: it fences the shard lease, closes a session whose credential's
// grace ended and asks to run again when the next grace ends.
func (r Reconcilers) NodeCredentialGrace(ctx context.Context, it workqueue.Item) error {
	next, err := r.h.expireNodeCredentials(ctx, it.Key, func(tx pgx.Tx) error { return it.Lease.Fence(ctx, tx) })
	if err != nil {
		return err
	}
	if next > 0 {
		return workqueue.Again(next)
	}
	return nil
}

func (h *Handlers) expireNodeCredentials(ctx context.Context, nodeID string, fence func(pgx.Tx) error) (time.Duration, error) {
	var next time.Duration
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		if fence != nil {
			if err := fence(tx); err != nil {
				return err
			}
		}
		q := db.New(tx)
		n, err := q.NodeLivenessLock(ctx, nodeID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return pg.Translate(err, "node "+nodeID)
		}
		if err := closeRevokedSession(ctx, q, n); err != nil {
			return err
		}
		secs, err := q.NodeCredentialNextGraceEnd(ctx, nodeID)
		if err != nil {
			return pg.Translate(err, "node credentials")
		}
		next = time.Duration(secs * float64(time.Second))
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("expire credentials of node %s: %w", nodeID, err)
	}
	return next, nil
}
