package pg_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// A batch that ends in Commit commits the transaction InTxBatch began, in
// its own round trip: InTxBatch sends no COMMIT after it, the connection
// goes back to the pool outside any transaction, and the after-commit hook
// still runs. A statement of that batch that fails takes the whole
// transaction with it, the first batch's writes included.
func TestBatchCommitEndsTheTransaction(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := context.Background()
	pool, err := pg.Connect(ctx, d.URL, pg.PoolOptions{MaxConns: 1, Tracer: pg.RoundTripTracer{}})
	require.NoError(t, err)
	defer pool.Close()
	count := func(id uuid.UUID) int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM outbox WHERE id = $1", id).Scan(&n))
		return n
	}

	var rt pg.RoundTrips
	cctx := pg.WithRoundTrips(ctx, &rt)
	first, last := appendParams(), appendParams()
	err = pg.InTxBatch(cctx, pool, func(b *pg.Batch) {
		pg.ExecRows(cctx, b, (*db.Queries).OutboxAppend, first, nil)
	}, func(tx pgx.Tx) error {
		var b pg.Batch
		pg.ExecRows(cctx, &b, (*db.Queries).OutboxAppend, last, nil)
		b.Commit()
		return b.Send(cctx, tx)
	})
	require.NoError(t, err)
	require.Equal(t, int64(2), rt.RoundTrips.Load(), "BEGIN with the first append; the last append with COMMIT")
	require.Equal(t, 1, count(first.ID))
	require.Equal(t, 1, count(last.ID))
	require.Equal(t, 1, commitsOf(pool), "the after-commit hook ran once")
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, byte('I'), conn.Conn().PgConn().TxStatus(), "the connection went back idle")
	conn.Release()

	again, dup := appendParams(), appendParams()
	dup.ID = last.ID // a unique violation in the committing batch
	err = pg.InTxBatch(ctx, pool, func(b *pg.Batch) {
		pg.ExecRows(ctx, b, (*db.Queries).OutboxAppend, again, nil)
	}, func(tx pgx.Tx) error {
		var b pg.Batch
		pg.ExecRows(ctx, &b, (*db.Queries).OutboxAppend, dup, nil)
		b.Commit()
		return b.Send(ctx, tx)
	})
	require.True(t, pg.IsUniqueViolation(err), "got %v", err)
	require.Zero(t, count(again.ID), "the first batch's write rolled back with the failed commit batch")
	require.Equal(t, 1, commitsOf(pool), "no commit reported for the rolled-back transaction")
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT 1").Scan(&n), "the pool's connection is usable after the rollback")
}
