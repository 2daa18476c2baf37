package workqueue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/workqueue"
)

// explainingDB runs each query as it is, after running it once under
// EXPLAIN ANALYZE in a transaction it rolls back, and keeps that plan.
type explainingDB struct {
	d    *pgtest.DB
	plan []byte
}

func (e *explainingDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return e.d.Pool.Exec(ctx, sql, args...)
}

func (e *explainingDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return e.d.Pool.QueryRow(ctx, sql, args...)
}

func (e *explainingDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	tx, err := e.d.Pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	err = tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...).Scan(&e.plan)
	_ = tx.Rollback(ctx)
	if err != nil {
		return nil, err
	}
	return e.d.Pool.Query(ctx, sql, args...)
}

// rowsReadFrom is how many rows the plan's nodes read from table, loops
// counted.
func rowsReadFrom(t *testing.T, plan []byte, table string) int {
	t.Helper()
	var root []struct{ Plan map[string]any }
	require.NoError(t, json.Unmarshal(plan, &root))
	var walk func(n map[string]any) int
	walk = func(n map[string]any) int {
		total := 0
		if n["Relation Name"] == table {
			total += int(n["Actual Rows"].(float64) * n["Actual Loops"].(float64))
		}
		if kids, ok := n["Plans"].([]any); ok {
			for _, k := range kids {
				total += walk(k.(map[string]any))
			}
		}
		return total
	}
	return walk(root[0].Plan)
}

// A claim reads a few rows of each shard and kind, however many are due:
// with 20,000 rows due, a claim of one reads a row or two per shard and
// takes the oldest. It sorted every due row of its shards before, and one
// tenant's backlog of webhook deliveries (560,000 due) made each claim of
// the delivery pool take 270 ms: it delivered 7 a second, and every other
// tenant's deliveries waited behind the backlog for hours.
func TestClaimCostDoesNotGrowWithTheBacklog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	enqueue(t, d, "oldest", 0)
	d.AdvanceSimClock(t, time.Second)
	backlog := make([]string, 20_000)
	for i := range backlog {
		backlog[i] = fmt.Sprintf("k%d", i)
	}
	require.NoError(t, pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		return workqueue.EnqueueMany(ctx, db.New(tx), kind, backlog, 0)
	}))
	enqueue(t, d, "other-kind", 0) // another kind's row is no candidate
	_, err := d.Pool.Exec(ctx, "UPDATE work_queue SET kind = 'test.other' WHERE key = 'other-kind'")
	require.NoError(t, err)
	_, err = d.Pool.Exec(ctx, "ANALYZE work_queue")
	require.NoError(t, err)

	shards := make([]int32, workqueue.NumShards)
	names := make([]string, workqueue.NumShards)
	for i := range shards {
		shards[i] = int32(i)
		names[i] = workqueue.ShardLeaseName(int32(i))
	}
	_, err = lease.AcquireMany(ctx, d.Q, names, "w", lease.TTL)
	require.NoError(t, err)

	e := &explainingDB{d: d}
	claimed, err := db.New(e).WorkQueueClaim(ctx, db.WorkQueueClaimParams{
		ClaimSeconds: 60, Claimer: "w", Shards: shards, Kinds: []string{kind, "test.absent"}, MaxRows: 1,
	})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, "oldest", claimed[0].Key, "the oldest due row")

	read := rowsReadFrom(t, e.plan, "work_queue")
	require.LessOrEqual(t, read, 2*workqueue.NumShards+2,
		"a claim of one reads about a row per shard, not the backlog (%d rows read)", read)

	// The next claim skips the row claimed and takes the next oldest.
	next, err := db.New(e).WorkQueueClaim(ctx, db.WorkQueueClaimParams{
		ClaimSeconds: 60, Claimer: "w", Shards: shards, Kinds: []string{kind}, MaxRows: 32,
	})
	require.NoError(t, err)
	require.Len(t, next, 32)
	for _, r := range next {
		require.NotEqual(t, "oldest", r.Key)
		require.Equal(t, kind, r.Kind)
	}
}
