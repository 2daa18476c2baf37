package commands

import (
	"context"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// tokenOutlivesIssuer is the error for a token that ApiTokenCreate refused
// to insert because it would outlive issuerID, the token asking for it. An
// expiry bounds what a leaked token can do only if it cannot mint a token
// that lasts longer, so the caller is told the latest expiry it may give.
func tokenOutlivesIssuer(ctx context.Context, q *db.Queries, issuerID string, asked *time.Time) error {
	issuer, err := q.ApiTokenGet(ctx, issuerID)
	if err != nil {
		return pg.Translate(err, "token "+issuerID)
	}
	limit := "its expiry"
	if issuer.ExpiresAt != nil {
		limit = issuer.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	if asked == nil {
		return core.Errorf(core.CodeInvalidArgument,
			"expiresAt is required: the token issuing it expires at %s, and a token may not outlive the token that issues it", limit)
	}
	return core.Errorf(core.CodeInvalidArgument,
		"expiresAt %s is after %s, when the token issuing it expires: a token may not outlive the token that issues it",
		asked.UTC().Format(time.RFC3339Nano), limit)
}
