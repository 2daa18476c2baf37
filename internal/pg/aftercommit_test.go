package pg_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// committedAppends counts, per pool, the commits AfterCommit reported for
// transactions that ran OutboxAppend.
var committedAppends sync.Map // *pgxpool.Pool → *int

var countMu sync.Mutex

func init() {
	pg.AfterCommit("OutboxAppend", func(p *pgxpool.Pool) {
		countMu.Lock()
		defer countMu.Unlock()
		v, _ := committedAppends.LoadOrStore(p, new(int))
		*v.(*int)++
	})
}

func commitsOf(p *pgxpool.Pool) int {
	countMu.Lock()
	defer countMu.Unlock()
	v, ok := committedAppends.Load(p)
	if !ok {
		return 0
	}
	return *v.(*int)
}

func appendParams() db.OutboxAppendParams {
	return db.OutboxAppendParams{ID: uuid.New(), Type: "test.happened", Subject: "s", Data: json.RawMessage(`{}`)}
}

func appendTo(ctx context.Context, q db.DBTX) error {
	_, err := db.New(q).OutboxAppend(ctx, appendParams())
	return err
}

var errUndo = errors.New("undo")

// The hook runs once for every committed transaction that appended, by
// whichever path, and never for one that rolled back or appended nothing.
func TestAfterCommitSeesEveryPath(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := context.Background()
	pool := d.Pool
	step := func(name string, want int, run func() error, wantErr ...error) {
		t.Helper()
		before := commitsOf(pool)
		err := run()
		if len(wantErr) > 0 {
			require.ErrorIs(t, err, wantErr[0], name)
		} else {
			require.NoError(t, err, name)
		}
		require.Equal(t, want, commitsOf(pool)-before, name)
	}

	step("InTx, three appends", 1, func() error {
		return pg.InTx(ctx, pool, func(tx pgx.Tx) error {
			for range 3 {
				if err := appendTo(ctx, tx); err != nil {
					return err
				}
			}
			return nil
		})
	})
	step("InTx rolled back", 0, func() error {
		return pg.InTx(ctx, pool, func(tx pgx.Tx) error {
			if err := appendTo(ctx, tx); err != nil {
				return err
			}
			return errUndo
		})
	}, errUndo)
	step("InTx without an append", 0, func() error {
		return pg.InTx(ctx, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "SELECT 1")
			return err
		})
	})
	step("append before a savepoint rolled back, then commit", 1, func() error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := appendTo(ctx, tx); err != nil {
				return err
			}
			require.ErrorIs(t, pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
				require.NoError(t, appendTo(ctx, sp))
				return errUndo
			}), errUndo)
			return nil
		})
	})
	step("a failed transaction's COMMIT answers ROLLBACK", 0, func() error {
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		require.NoError(t, appendTo(ctx, tx))
		_, err = tx.Exec(ctx, "SELECT 1/0")
		require.Error(t, err)
		return tx.Commit(ctx)
	}, pgx.ErrTxCommitRollback)
	step("an append outside a transaction", 1, func() error { return appendTo(ctx, pool) })
	step("InTxBatch appending in the first batch", 1, func() error {
		return pg.InTxBatch(ctx, pool, func(b *pg.Batch) {
			pg.ExecRows(ctx, b, (*db.Queries).OutboxAppend, appendParams(), nil)
		}, func(pgx.Tx) error { return nil })
	})
	step("a batch sent on a transaction", 1, func() error {
		return pg.InTx(ctx, pool, func(tx pgx.Tx) error {
			var b pg.Batch
			pg.ExecRows(ctx, &b, (*db.Queries).OutboxAppend, appendParams(), nil)
			return b.Send(ctx, tx)
		})
	})
	step("a batch outside a transaction (implicit transaction)", 1, func() error {
		var b pg.Batch
		pg.ExecRows(ctx, &b, (*db.Queries).OutboxAppend, appendParams(), nil)
		return pool.SendBatch(ctx, &b.Batch).Close()
	})
}

// A tracer given in PoolOptions still sees what the pool runs.
func TestAfterCommitChainsTheCallersTracer(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := context.Background()
	pool, err := pg.Connect(ctx, d.URL, pg.PoolOptions{MaxConns: 2, Tracer: pg.RoundTripTracer{}})
	require.NoError(t, err)
	defer pool.Close()
	var rt pg.RoundTrips
	cctx := pg.WithRoundTrips(ctx, &rt)
	require.NoError(t, pg.InTx(cctx, pool, func(tx pgx.Tx) error { return appendTo(cctx, tx) }))
	require.Equal(t, int64(3), rt.Statements.Load(), "BEGIN, the append, COMMIT")
	require.Equal(t, 1, commitsOf(pool))

	quiet, err := pg.Connect(ctx, d.URL, pg.PoolOptions{MaxConns: 1, NoAfterCommit: true})
	require.NoError(t, err)
	defer quiet.Close()
	require.NoError(t, appendTo(ctx, quiet))
	require.Zero(t, commitsOf(quiet), "NoAfterCommit")
}
