package commands

import (
	"context"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// checkMaxTTL refuses a token asked for without an expiry, or with one
// later than MaxTTL from now (business time, the clock the token's
// created_at is read from in the same transaction), when MaxTTL is set.
// It refuses rather than shortens: a client that asked for a lasting token
// must learn that it did not get one, not find out when it stops working.
func (t *Tokens) checkMaxTTL(ctx context.Context, q *db.Queries, asked *time.Time) error {
	if t.MaxTTL <= 0 {
		return nil
	}
	now, err := q.ClockNow(ctx)
	if err != nil {
		return pg.Translate(err, "clock")
	}
	latest := now.Add(t.MaxTTL)
	if asked == nil {
		return core.Errorf(core.CodeTokenLifetimeExceeded,
			"expiresAt is required: tokens live at most %s here (COMPUTE_MAX_TOKEN_TTL), so expire no later than %s",
			t.MaxTTL, latest.UTC().Format(time.RFC3339))
	}
	if asked.After(latest) {
		return core.Errorf(core.CodeTokenLifetimeExceeded,
			"expiresAt %s is more than %s ahead (COMPUTE_MAX_TOKEN_TTL): expire no later than %s",
			asked.UTC().Format(time.RFC3339Nano), t.MaxTTL, latest.UTC().Format(time.RFC3339))
	}
	return nil
}
