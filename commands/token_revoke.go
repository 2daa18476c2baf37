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
	// RevokedIDs are the tokens this revoke revoked, the token itself
	// first when it was not revoked before: what the process that ran it
	// drops from its cache at once.
	RevokedIDs []string
}

// RevokeToken ends a token's validity, and that of every token descending
// from it, in one transaction: otherwise a leaked token could mint a second
// one and its revocation would achieve nothing (Vault's token hierarchy).
// Operators may revoke any token; any other token may revoke itself and
// no other: whoever holds a token that may have leaked ends it without
// waiting for an operator, and a token can only give up its own access by
// it. Each token revoked gets its own revoked change
// in authz_changes, so caches drop it and its open event streams end, and
// its stream tickets redeem nothing, exactly as for a token revoked
// directly.
//
// Revoking a token that is already revoked records nothing for the token
// itself, so a retried DELETE is harmless; it still revokes the
// descendants that are valid, those of a token revoked on its own before
// (RevokeTokenAlone).
//
// The token is locked FOR NO KEY UPDATE before its descendants are read, in
// a statement of its own: an insert under it locks its issuers FOR SHARE, so
// either it commits first and the next statement, with a fresh snapshot,
// revokes the new token too, or it waits for this revoke and then finds
// its issuer revoked and inserts nothing (ApiTokenCreate).
func (t *Tokens) RevokeToken(ctx context.Context, actor core.Actor, id string) (TokenRevoked, error) {
	return t.revokeToken(ctx, actor, id, false)
}

// RevokeTokenAlone ends a token's validity and no other's: the tokens it
// issued stay valid. It is how a token that issued the ones in use (the
// first start's operator token above all) is retired without them. They
// remain its descendants, so a later RevokeToken of it still revokes them,
// and a leaked token that revokes itself this way keeps nothing of what it
// minted out of reach.
func (t *Tokens) RevokeTokenAlone(ctx context.Context, actor core.Actor, id string) (TokenRevoked, error) {
	return t.revokeToken(ctx, actor, id, true)
}

// revokeToken is RevokeToken, or RevokeTokenAlone when alone.
func (t *Tokens) revokeToken(ctx context.Context, actor core.Actor, id string, alone bool) (TokenRevoked, error) {
	if !actor.IsOperator() && (actor.TokenID == "" || id != actor.TokenID) {
		return TokenRevoked{}, core.Errorf(core.CodePermissionDenied, "only operators may revoke another token; a token may revoke itself")
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
		out = TokenRevoked{TokenInfo: tokenInfoOf(db.ApiTokenGetRow(before))}
		if alone {
			rows, err := q.ApiTokenRevokeAlone(ctx, id)
			if err != nil {
				return pg.Translate(err, "token")
			}
			for _, r := range rows {
				out.TokenInfo = tokenInfoOf(db.ApiTokenGetRow(r))
				out.RevokedIDs = append(out.RevokedIDs, r.ID)
			}
			return nil
		}
		rows, err := q.ApiTokenRevokeTree(ctx, id)
		if err != nil {
			return pg.Translate(err, "token")
		}
		for _, r := range rows {
			if r.ID == id {
				out.TokenInfo = tokenInfoOf(db.ApiTokenGetRow(r))
				out.RevokedIDs = append([]string{r.ID}, out.RevokedIDs...)
			} else {
				out.DescendantsRevoked++
				out.RevokedIDs = append(out.RevokedIDs, r.ID)
			}
		}
		return nil
	})
	if err != nil {
		return TokenRevoked{}, fmt.Errorf("revoke token %s: %w", id, err)
	}
	return out, nil
}
