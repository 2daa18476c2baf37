package queries_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/queries"
)

// A tenant's page of reservations reads that page, whatever another tenant
// holds and whatever it listed before on the same connection. Two ways it
// did not, with one tenant ("big") holding 200,000 reservations, nearly all
// ended:
//
//   - big's GET /v1/reservations?state=active read all of them through
//     (tenant, creation) to find the few active ones, 0.2 to 0.5 s a page
//     on the API's read pool of two connections;
//   - after five such pages on a connection, PostgreSQL kept a generic
//     plan of the list statement there (the custom ones had looked dear),
//     which walks every tenant's reservations in creation order and
//     filters: another tenant's list of ten took 188 ms instead of 0.04.
//
// Here on 20,000 rows: the statements each list sent are run again under
// EXPLAIN ANALYZE EXECUTE on the very connection, with the plan it cached,
// and with a forced generic plan; the rows they read are counted.
func TestTenantReservationPagesReadThePage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	const history = 20_000
	_, err := d.Pool.Exec(ctx, `
		INSERT INTO tenants (id) VALUES ('big'), ('small') ON CONFLICT DO NOTHING;
		INSERT INTO rm_reservations (id, tenant_id, state, pool_id, start_ts, end_ts, version,
		       created_txid, created_seq, updated_txid, updated_seq, created_at, updated_at)
		SELECT 'rsv_big' || g, 'big', CASE WHEN g % 2000 = 0 THEN 'active' ELSE 'released' END, 'fra1-gpu',
		       compute_now(), compute_now() + interval '1 hour', 1, '100', g, '100', g, compute_now(), compute_now()
		  FROM generate_series(1, `+fmt.Sprint(history)+`) g;
		INSERT INTO rm_reservations (id, tenant_id, state, pool_id, start_ts, end_ts, version,
		       created_txid, created_seq, updated_txid, updated_seq, created_at, updated_at)
		SELECT 'rsv_small' || g, 'small', 'booked', 'fra1-gpu',
		       compute_now(), compute_now() + interval '1 hour', 1, '101', g, '101', g, compute_now(), compute_now()
		  FROM generate_series(1, 10) g;
		ANALYZE rm_reservations`)
	require.NoError(t, err)

	pool, capture := planCachingPool(t, d.URL, "RmReservationList")
	q := queries.New(pool)
	big := core.Actor{Tenant: "big", Identity: "b", Role: core.RoleMember}
	small := core.Actor{Tenant: "small", Identity: "s", Role: core.RoleMember}

	// Big pages through its active reservations, again and again, on the
	// pool's one connection.
	for range 8 {
		items, next, err := q.ListReservations(ctx, big, queries.ListReservations{State: "active", Limit: 5})
		require.NoError(t, err)
		require.Len(t, items, 5)
		require.NotEmpty(t, next)
	}
	bigSQL, bigArgs := capture.Last()
	// An operator's page of every tenant's active reservations (the
	// console's "live" view asks for pending, booked and active).
	op := core.Actor{Tenant: "ops", Identity: "o", Role: core.RoleOperator}
	for range 8 {
		items, _, err := q.ListReservations(ctx, op, queries.ListReservations{State: "active", Limit: 5})
		require.NoError(t, err)
		require.Len(t, items, 5)
		require.Equal(t, core.ReservationActive, items[0].State)
	}
	opSQL, opArgs := capture.Last()
	items, next, err := q.ListReservations(ctx, small, queries.ListReservations{Limit: 20})
	require.NoError(t, err)
	require.Len(t, items, 10)
	require.Empty(t, next)
	smallSQL, smallArgs := capture.Last()

	for _, c := range []struct {
		who  string
		sql  string
		args []any
	}{{"small's page", smallSQL, smallArgs}, {"big's page of active reservations", bigSQL, bigArgs},
		{"an operator's page of active reservations", opSQL, opArgs}} {
		for _, generic := range []bool{false, true} {
			read := rmRowsRead(t, pool, "rm_reservations", c.sql, c.args, generic)
			require.LessOrEqual(t, read, 21, "rows of rm_reservations read for %s (forced generic plan: %v), %d rows in the table",
				c.who, generic, history+10)
		}
	}
}

// planCachingPool is a pool of one connection that prepares its statements
// by name, so that PostgreSQL caches their plans there, and that records
// the last statement named after prefix (a sqlc query name) with its
// arguments. It skips the test where statements are not prepared by name.
func planCachingPool(t *testing.T, url, prefix string) (*pgxpool.Pool, *pgtest.LastStatement) {
	t.Helper()
	capture := &pgtest.LastStatement{Prefix: "-- name: " + prefix}
	pool, err := pg.Connect(context.Background(), url, pg.PoolOptions{MaxConns: 1, IdleInTxTimeout: time.Minute, Tracer: capture})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	if mode := pool.Config().ConnConfig.DefaultQueryExecMode; mode != pgx.QueryExecModeCacheStatement {
		t.Skipf("statements are not prepared by name (query exec mode %v): no plan cache to test", mode)
	}
	return pool, capture
}

// rmRowsRead runs the prepared statement of sql on the pool's connection
// under EXPLAIN ANALYZE EXECUTE with args, with the plan that connection
// cached for it (or, generic, with plan_cache_mode = force_generic_plan),
// and returns the rows of table rel its plan read, those its filters
// dropped included.
func rmRowsRead(t *testing.T, pool *pgxpool.Pool, rel, sql string, args []any, generic bool) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	var name string
	require.NoError(t, conn.QueryRow(ctx, "SELECT name FROM pg_prepared_statements WHERE statement = $1", sql).Scan(&name),
		"the connection has no prepared statement of %.60s", sql)
	if generic {
		_, err = conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan")
		require.NoError(t, err)
		defer func() {
			_, err := conn.Exec(ctx, "RESET plan_cache_mode")
			require.NoError(t, err)
		}()
	}
	plan, err := pgtest.ExplainExecute(ctx, conn, name, args)
	require.NoError(t, err)
	return plan.RowsRead(rel)
}
