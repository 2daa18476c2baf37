package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// TokenRevoked is what a revoke answers: the token as it is now, and how
// many tokens descending from it (the tokens it issued, theirs, …) this
// revoke revoked with it.
type TokenRevoked struct {
	TokenInfo
	DescendantsRevoked int
}

// RevokeToken ends a token's validity, and that of every token descending
// from it, in one transaction: otherwise a leaked token could mint a second
// one and its revocation would achieve nothing (Vault's token hierarchy).
// Only operators may revoke. Each token revoked gets its own revoked change
// in authz_changes, so caches drop it and its open event streams end, and
// its stream tickets redeem nothing, exactly as for a token revoked
// directly.
//
// Revoking a token that is already revoked returns it unchanged and records
// nothing, so a retried DELETE is harmless.
//
// The token is locked FOR NO KEY UPDATE before its descendants are read, in
// a statement of its own: an insert under it locks its issuers FOR SHARE, so
// either it commits first and the next statement, with a fresh snapshot,
// revokes the new token too, or it waits for this revoke and then finds
// its issuer revoked and inserts nothing (ApiTokenCreate).
func (t *Tokens) RevokeToken(ctx context.Context, actor core.Actor, id string) (TokenRevoked, error) {
	if !actor.IsOperator() {
		return TokenRevoked{}, core.Errorf(core.CodePermissionDenied, "only operators may revoke tokens")
	}
	var out TokenRevoked
	err := pg.InTx(ctx, t.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		before, err := q.ApiTokenLockForRevoke(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return core.Errorf(core.CodeNotFound, tokenNotFoundMessage, id)
		}
		if err != nil {
			return pg.Translate(err, "token")
		}
		rows, err := q.ApiTokenRevokeTree(ctx, id)
		if err != nil {
			return pg.Translate(err, "token")
		}
		out = TokenRevoked{TokenInfo: tokenInfoOf(db.ApiTokenGetRow(before))}
		for _, r := range rows {
			if r.ID == id {
				out.TokenInfo = tokenInfoOf(db.ApiTokenGetRow(r))
			} else {
				out.DescendantsRevoked++
			}
		}
		return nil
	})
	if err != nil {
		return TokenRevoked{}, fmt.Errorf("revoke token %s: %w", id, err)
	}
	return out, nil
}
