package migrate_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/migrate"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Processes that start together on a new database (an API and a worker
// started by one deploy) each apply the migrations at start: one applies
// them, the others wait for it and find nothing left to do. None fails.
func TestProcessesStartingTogetherMigrateOnce(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.NewEmpty(t)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			pool, err := pg.Connect(ctx, dbURL, pg.PoolOptions{MaxConns: 2, IdleInTxTimeout: time.Minute})
			if err != nil {
				errs[i] = err
				return
			}
			defer pool.Close()
			errs[i] = migrate.Up(ctx, pool)
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "process %d", i)
	}

	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var applied, distinct int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0`).
		Scan(&applied, &distinct))
	require.Equal(t, distinct, applied, "each migration applied once")
	entries, err := os.ReadDir("../../../sql/migrations")
	require.NoError(t, err)
	require.Equal(t, len(entries), applied, "every migration applied")
}
