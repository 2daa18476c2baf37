package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// `compute check` changes nothing, its schema included: on a database
// behind this binary's migrations (the old release's, while its processes
// still run) it fails saying to run `compute migrate`, and applies none.
// It used to apply them all, under the running processes, before checking.
func TestCheckDoesNotMigrate(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.NewEmpty(t)
	t.Setenv("DATABASE_URL", dbURL)
	cfg, err := config.Load()
	require.NoError(t, err)
	logger := slog.New(slog.DiscardHandler)
	migrated := func() bool {
		conn, err := pgx.Connect(ctx, dbURL)
		require.NoError(t, err)
		defer conn.Close(ctx)
		var table *string
		require.NoError(t, conn.QueryRow(ctx, `SELECT to_regclass('goose_db_version')::text`).Scan(&table))
		return table != nil
	}

	err = checkCmd(ctx, cfg, logger)
	require.ErrorContains(t, err, "the database is at migration 0000 and this release's schema at ")
	require.ErrorContains(t, err, "run `compute migrate` first")
	require.False(t, migrated(), "check applied migrations")

	require.NoError(t, migrateCmd(ctx, cfg, logger))
	require.NoError(t, checkCmd(ctx, cfg, logger), "check on a migrated database")
}
