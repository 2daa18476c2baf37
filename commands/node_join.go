package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
)

// JoinNode issues a new credential for a registered node (operator only)
// and starts its liveness clock: a node that never opens a session becomes
// unreachable NoSessionAfter after its newest join. The node's earlier
// credentials are revoked with a grace (Config.NodeCredentialGrace): they
// keep authenticating until it ends, so a daemon that re-joins does not
// lock out one still running, and then stop, so a stolen one dies with it.
func (h *Handlers) JoinNode(ctx context.Context, actor core.Actor, nodeID string) (NodeCredential, error) {
	if err := requireOperator(actor, "nodes.join"); err != nil {
		return NodeCredential{}, err
	}
	return h.joinNode(ctx, nodeID, "")
}

// JoinNodeWithToken is JoinNode authorised by a single-use join token
// (bcj_…) issued for nodeID. The token is consumed in the join's
// transaction: a second use, an expired or revoked token and a token for
// another node are all UNAUTHENTICATED, alike.
func (h *Handlers) JoinNodeWithToken(ctx context.Context, joinToken, nodeID string) (NodeCredential, error) {
	if joinToken == "" {
		return NodeCredential{}, errInvalidJoinToken
	}
	return h.joinNode(ctx, nodeID, joinToken)
}

// joinNode issues the credential. A join token, when given, authorises it:
// it is checked first, so a refused token says nothing about the node, and
// consumed in the same transaction.
func (h *Handlers) joinNode(ctx context.Context, nodeID, joinToken string) (NodeCredential, error) {
	token, err := nodeSecret(nodeCredentialPrefix, 32)
	if err != nil {
		return NodeCredential{}, fmt.Errorf("node credential: %w", err)
	}
	id, err := nodeSecret("ncr_", 9)
	if err != nil {
		return NodeCredential{}, fmt.Errorf("node credential id: %w", err)
	}
	cred := NodeCredential{ID: id, NodeID: nodeID, Token: token}
	grace := h.nodeCredentialGrace()
	err = pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		if joinToken != "" {
			_, err := q.NodeJoinTokenCheck(ctx, db.NodeJoinTokenCheckParams{TokenHash: hashSecret(joinToken), NodeID: nodeID})
			if errors.Is(err, pgx.ErrNoRows) {
				return errInvalidJoinToken
			}
			if err != nil {
				return pg.Translate(err, "join token")
			}
		}
		n, err := q.NodeLivenessLock(ctx, nodeID)
		if err != nil {
			return pg.Translate(err, "node "+nodeID)
		}
		if core.State(n.State) == core.NodeRetired {
			return core.Errorf(core.CodeConflict, "node %s is retired", nodeID)
		}
		if err := q.NodeSessionEnsure(ctx, nodeID); err != nil {
			return pg.Translate(err, "node session")
		}
		if err := q.NodeCredentialCreate(ctx, db.NodeCredentialCreateParams{ID: cred.ID, NodeID: nodeID,
			TokenHash: hashSecret(token)}); err != nil {
			return pg.Translate(err, "node credential")
		}
		if joinToken != "" {
			// A concurrent join with the same token waited for this one
			// at the node lock; whichever comes second consumes nothing.
			// A revocation committed meanwhile wins the same way. Used up,
			// the token is revoked for authz_changes' readers.
			used, err := q.NodeJoinTokenConsume(ctx, db.NodeJoinTokenConsumeParams{CredentialID: cred.ID,
				TokenHash: hashSecret(joinToken), NodeID: nodeID})
			if errors.Is(err, pgx.ErrNoRows) {
				return errInvalidJoinToken
			}
			if err != nil {
				return pg.Translate(err, "join token")
			}
			if err := joinTokenChanged(ctx, q, used, tokenChangeRevoked); err != nil {
				return err
			}
		}
		superseded, err := q.NodeCredentialSupersede(ctx, db.NodeCredentialSupersedeParams{
			GraceSeconds: grace.Seconds(), NodeID: nodeID, KeepID: cred.ID})
		if err != nil {
			return pg.Translate(err, "node credentials")
		}
		for _, old := range superseded {
			if _, err := appendCredentialRevoked(ctx, q, nodeID, old.ID, "superseded", &old.GraceUntil); err != nil {
				return err
			}
		}
		if len(superseded) > 0 {
			if grace == 0 {
				if err := closeRevokedSession(ctx, q, n); err != nil {
					return err
				}
			} else if err := workqueue.Enqueue(ctx, q, KindNodeCredentialGrace, nodeID, grace); err != nil {
				return err
			}
		}
		if err := workqueue.Enqueue(ctx, q, KindNodeLiveness, nodeID, NoSessionAfter); err != nil {
			return err
		}
		cred.Position, err = emit(ctx, q, core.EventNodeJoined, "", core.NodeSubject(nodeID),
			core.NodeJoinedEventData{ID: nodeID, CredentialID: cred.ID})
		return err
	})
	if err != nil {
		return NodeCredential{}, fmt.Errorf("join node %s: %w", nodeID, err)
	}
	return cred, nil
}
