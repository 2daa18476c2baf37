package commands

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// RevokeNodeCredential revokes one of the node's credentials (operator
// only): it stops authenticating at once, grace or not, and the node's
// session, if it was opened with it, is closed in the same transaction (its
// epoch moves on, so the gateway drops the connection at its next flush and
// nothing can route to it). Revoking a revoked credential changes nothing.
// An unknown node or credential is NOT_FOUND.
func (h *Handlers) RevokeNodeCredential(ctx context.Context, actor core.Actor, nodeID, credentialID string) error {
	if err := requireOperator(actor, "nodes.credentials.revoke"); err != nil {
		return err
	}
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		n, err := q.NodeLivenessLock(ctx, nodeID)
		if err != nil {
			return pg.Translate(err, "node "+nodeID)
		}
		c, err := q.NodeCredentialGetForUpdate(ctx, db.NodeCredentialGetForUpdateParams{ID: credentialID, NodeID: nodeID})
		if err != nil {
			return pg.Translate(err, "node credential "+credentialID)
		}
		if !c.Active {
			return nil
		}
		if _, err := q.NodeCredentialRevoke(ctx, db.NodeCredentialRevokeParams{ID: credentialID, NodeID: nodeID}); err != nil {
			return pg.Translate(err, "node credential "+credentialID)
		}
		if _, err := appendCredentialRevoked(ctx, q, nodeID, credentialID, "revoked", nil); err != nil {
			return err
		}
		return closeRevokedSession(ctx, q, n)
	})
	if err != nil {
		return fmt.Errorf("revoke credential %s of node %s: %w", credentialID, nodeID, err)
	}
	return nil
}
