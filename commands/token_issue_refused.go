package commands

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// tokenIssueRefused is the error for a token that ApiTokenCreate refused to
// insert as issued by issuerID, the token asking for it: that token is
// unknown or was revoked (a revoke of it, or of a token above it, committed
// while the request was on its way), or the new token would outlive it. An
// expiry bounds what a leaked token can do only if it cannot mint a token
// that lasts longer, so the caller is told the latest expiry it may give.
func tokenIssueRefused(ctx context.Context, q *db.Queries, issuerID string, asked *time.Time) error {
	issuer, err := q.ApiTokenGet(ctx, issuerID)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && issuer.RevokedAt != nil) {
		return core.Errorf(core.CodeUnauthenticated, "the token issuing this one is revoked or unknown")
	}
	if err != nil {
		return pg.Translate(err, "token "+issuerID)
	}
	if issuer.ExpiresAt == nil || (asked != nil && !asked.After(*issuer.ExpiresAt)) {
		// Not its own expiry, so a token above it: revoked, and the revoke
		// that revoked it revokes its descendants in the same transaction.
		return core.Errorf(core.CodeUnauthenticated, "a token that issued the token issuing this one is revoked")
	}
	limit := issuer.ExpiresAt.UTC().Format(time.RFC3339Nano)
	if asked == nil {
		return core.Errorf(core.CodeInvalidArgument,
			"expiresAt is required: the token issuing it expires at %s, and a token may not outlive the token that issues it", limit)
	}
	return core.Errorf(core.CodeInvalidArgument,
		"expiresAt %s is after %s, when the token issuing it expires: a token may not outlive the token that issues it",
		asked.UTC().Format(time.RFC3339Nano), limit)
}
