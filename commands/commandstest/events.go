package commandstest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// AppendEvents appends events to the outbox in one transaction of their
// own, as a command would, and returns the position of the last. It is for
// tests that need events in the log without the command that makes them
// (the event stream, webhook delivery), so that packages above commands
// need not reach for the generated queries to write one.
func AppendEvents(t testing.TB, pool *pgxpool.Pool, events ...core.Event) outbox.Position {
	t.Helper()
	ctx := context.Background()
	var pos outbox.Position
	require.NoError(t, pg.InTx(ctx, pool, func(tx pgx.Tx) error {
		var err error
		pos, err = outbox.Append(ctx, db.New(tx), events...)
		return err
	}))
	return pos
}
