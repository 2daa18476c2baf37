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

// ExpireNodeCredentials closes the node's session if the credential it was
// opened with no longer authenticates (its grace ended) and returns how
// long until the next grace of the node's credentials ends (0: none). It is
// the plain method behind KindNodeCredentialGrace, callable from tests in
// simulated time.
func (h *Handlers) ExpireNodeCredentials(ctx context.Context, nodeID string) (time.Duration, error) {
	return h.expireNodeCredentials(ctx, nodeID, nil)
}

// HandleNodeCredentialGrace is the KindNodeCredentialGrace work-queue
// handler: it fences the shard lease, closes a session whose credential's
// grace ended and asks to run again when the next grace ends.
func (h *Handlers) HandleNodeCredentialGrace(ctx context.Context, it workqueue.Item) error {
	next, err := h.expireNodeCredentials(ctx, it.Key, func(tx pgx.Tx) error { return it.Lease.Fence(ctx, tx) })
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
