package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// joinTokenPrefix marks single-use join tokens.
const joinTokenPrefix = core.JoinTokenPrefix

// Join token lifetimes: DefaultJoinTokenTTL unless the operator asks for
// another, at most MaxJoinTokenTTL.
const (
	DefaultJoinTokenTTL = time.Hour
	MaxJoinTokenTTL     = 24 * time.Hour
)

// errInvalidJoinToken is every refusal of a join token: unknown, used,
// expired, or issued for another node. They read alike, so a caller learns
// nothing about which.
var errInvalidJoinToken = core.Errorf(core.CodeUnauthenticated, "invalid join token")

// JoinToken is a single-use join token as issued. Token, the secret, is
// shown only here; the database keeps its SHA-256 hash.
type JoinToken struct {
	ID        string    `json:"id"`
	NodeID    string    `json:"nodeId"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// IsJoinToken reports whether a bearer token is a join token by its prefix.
func IsJoinToken(token string) bool { return strings.HasPrefix(token, joinTokenPrefix) }

// CreateJoinToken issues a join token (operator only) good for one join of
// nodeID within ttl (0 means DefaultJoinTokenTTL; at most MaxJoinTokenTTL).
// The node need not exist yet: joining registers it. A retired node cannot
// join, so it gets no token.
//
// A join token authenticates one request only, POST /v1/nodes/{id}/join of
// its node: it is not an API token (api_tokens), so every other route
// refuses it as unknown. Like every token change, issuing, using and
// revoking one append to authz_changes in the same transaction. The API
// token that asks for it is recorded as its issuer: revoking that token
// with its descendants revokes the join token too while it is unused, and
// an issuer with an expiry issues only join tokens that expire no later
// (INVALID_ARGUMENT otherwise, checked by the insert).
func (h *Handlers) CreateJoinToken(ctx context.Context, actor core.Actor, nodeID string, ttl time.Duration) (JoinToken, error) {
	if err := requireOperator(actor, "nodes.join-tokens.create"); err != nil {
		return JoinToken{}, err
	}
	if ttl == 0 {
		ttl = DefaultJoinTokenTTL
	}
	if ttl < time.Second || ttl > MaxJoinTokenTTL {
		return JoinToken{}, core.Errorf(core.CodeInvalidArgument, "ttlSeconds must be between 1 and %d",
			int64(MaxJoinTokenTTL/time.Second))
	}
	if err := core.ValidNodeID(nodeID); err != nil { // a token no node could ever use
		return JoinToken{}, err
	}
	token, err := nodeSecret(joinTokenPrefix, 32)
	if err != nil {
		return JoinToken{}, fmt.Errorf("join token: %w", err)
	}
	id, err := nodeSecret("njt_", 9)
	if err != nil {
		return JoinToken{}, fmt.Errorf("join token id: %w", err)
	}
	out := JoinToken{ID: id, NodeID: nodeID, Token: token}
	err = pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		n, err := q.NodeGet(ctx, nodeID)
		switch {
		case err == nil && core.State(n.State) == core.NodeRetired:
			return core.Errorf(core.CodeConflict, "node %s is retired", nodeID)
		case err != nil && !errors.Is(err, pgx.ErrNoRows):
			return pg.Translate(err, "node "+nodeID)
		}
		var issuer *string
		if actor.TokenID != "" {
			issuer = &actor.TokenID // revoking it revokes this join token while unused (ApiTokenRevokeTree)
		}
		out.ExpiresAt, err = q.NodeJoinTokenCreate(ctx, db.NodeJoinTokenCreateParams{ID: id, NodeID: nodeID,
			TokenHash: hashSecret(token), TenantID: actor.Tenant, Identity: actor.Identity, TtlSeconds: ttl.Seconds(),
			IssuerID: issuer})
		if errors.Is(err, pgx.ErrNoRows) {
			return joinTokenIssueRefused(ctx, q, actor.TokenID, ttl)
		}
		if err != nil {
			return pg.Translate(err, "join token")
		}
		return joinTokenChanged(ctx, q, id, tokenChangeCreated)
	})
	if err != nil {
		return JoinToken{}, fmt.Errorf("create join token for node %s: %w", nodeID, err)
	}
	return out, nil
}

// joinTokenIssueRefused is why NodeJoinTokenCreate inserted nothing: the
// issuing token is revoked or unknown (UNAUTHENTICATED), or it expires
// before a join token of ttl would (INVALID_ARGUMENT, naming its expiry): a
// join token never outlives the token that issues it.
func joinTokenIssueRefused(ctx context.Context, q *db.Queries, issuerID string, ttl time.Duration) error {
	issuer, err := q.ApiTokenGet(ctx, issuerID)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return pg.Translate(err, "token "+issuerID)
	}
	if err == nil && issuer.RevokedAt == nil && issuer.ExpiresAt != nil {
		return core.Errorf(core.CodeInvalidArgument,
			"a join token of %d s would outlive the token that issues it, which expires at %s: ask for a shorter ttlSeconds",
			int64(ttl/time.Second), issuer.ExpiresAt.UTC().Format(time.RFC3339Nano))
	}
	return core.Errorf(core.CodeUnauthenticated, "the token issuing this join token is revoked or unknown")
}

// RevokeJoinToken takes back a join token of nodeID (operator only) before
// it is used: from the commit on it joins nothing, and authz_changes
// records the revocation. Revoking a token already revoked, or already used
// (it can do nothing more), changes nothing and succeeds, so a retried
// DELETE is harmless; an unknown token, or one of another node, is
// NOT_FOUND.
func (h *Handlers) RevokeJoinToken(ctx context.Context, actor core.Actor, nodeID, tokenID string) error {
	if err := requireOperator(actor, "nodes.join-tokens.revoke"); err != nil {
		return err
	}
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		rows, err := q.NodeJoinTokenRevoke(ctx, db.NodeJoinTokenRevokeParams{ID: tokenID, NodeID: nodeID})
		if err != nil {
			return pg.Translate(err, "join token")
		}
		if rows == 0 {
			if _, err := q.NodeJoinTokenGet(ctx, db.NodeJoinTokenGetParams{ID: tokenID, NodeID: nodeID}); err != nil {
				return pg.Translate(err, "join token "+tokenID)
			}
			return nil // used or revoked before
		}
		return joinTokenChanged(ctx, q, tokenID, tokenChangeRevoked)
	})
	if err != nil {
		return fmt.Errorf("revoke join token %s of node %s: %w", tokenID, nodeID, err)
	}
	return nil
}

// joinTokenChanged appends a join token's change to authz_changes: created
// when issued, revoked when revoked or used up.
func joinTokenChanged(ctx context.Context, q *db.Queries, tokenID, change string) error {
	if err := q.AuthzChangeAppend(ctx, db.AuthzChangeAppendParams{TokenID: tokenID, Change: change}); err != nil {
		return pg.Translate(err, "authz change")
	}
	return nil
}

// CheckJoinToken reports whether a join token may join nodeID now, without
// using it up (JoinNodeWithToken does, in the join's transaction), and
// returns the actor the join acts as: the operator who issued the token,
// under the token's id. Any refusal is the same UNAUTHENTICATED.
func (h *Handlers) CheckJoinToken(ctx context.Context, token, nodeID string) (core.Actor, error) {
	row, err := db.New(h.Pool).NodeJoinTokenCheck(ctx, db.NodeJoinTokenCheckParams{TokenHash: hashSecret(token),
		NodeID: nodeID})
	if errors.Is(err, pgx.ErrNoRows) {
		return core.Actor{}, errInvalidJoinToken
	}
	if err != nil {
		return core.Actor{}, fmt.Errorf("check join token: %w", pg.Translate(err, "join token"))
	}
	return core.Actor{TokenID: row.ID, Tenant: row.TenantID, Identity: row.Identity, Role: core.RoleOperator}, nil
}
