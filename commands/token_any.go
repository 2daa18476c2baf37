package commands

import (
	"context"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// AnyExists reports whether the database holds any API token at all, of
// any tenant, revoked ones included. `compute serve` asks it at its first
// start to decide whether to issue the bootstrap operator token.
func (t *Tokens) AnyExists(ctx context.Context) (bool, error) {
	rows, err := db.New(t.Pool).ApiTokenList(ctx, db.ApiTokenListParams{MaxRows: 1})
	if err != nil {
		return false, pg.Translate(err, "api tokens")
	}
	return len(rows) > 0, nil
}
