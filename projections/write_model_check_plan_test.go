package projections_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/projections"
)

// Caught up, the check reads the log at each projection's cursor, not the
// log: past 20,000 events its queries, each with a disagreeing row to look
// up among the subjects after the cursor, read a few buffers of the outbox
// and its indexes, with the plans a pooled connection uses for them after
// six checks run while the projections were 20,000 events behind. The
// check reads the cursors first and has each query planned with its
// cursor: left to PostgreSQL's choice (plan_cache_mode = auto), the
// connection switches to a generic plan after those five runs (it did in
// this test: 4 of the 9 runs), which does not know where the scan starts
// and expects a third of the log after it, as the queries planned before
// the check read the cursors first; over a large log such a plan read the
// whole of an index of the outbox to find nothing (docs/benchmarks.md).
func TestCheckCaughtUpReadsTheLogAtTheCursor(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rs := f.scenario(t)
	f.catchUp(t)
	// A row of each read model disagrees, so that each query looks its
	// subjects up among those after the cursor.
	p2 := rs["p2"].Reservation.ID
	for _, stmt := range []string{
		"UPDATE rm_reservations SET state = 'released' WHERE id = '" + rs["a"].Reservation.ID + "'",
		"UPDATE rm_fleet_nodes SET vcpu = vcpu + 1 WHERE id = 'n2'",
		"UPDATE rm_fleet_devices SET quarantined = NOT quarantined WHERE id = 'GPU-n3-0'",
		"UPDATE rm_fleet_allocations SET live = NOT live WHERE reservation_id = '" + p2 + "'",
		"UPDATE rm_device_holders SET during = tstzrange(lower(during), upper(during) + interval '1 hour') WHERE reservation_id = '" + p2 + "'",
	} {
		_, err := f.d.Pool.Exec(f.ctx, stmt)
		require.NoError(t, err, stmt)
	}
	const flood = 20_000
	// Events of node jobs, which no compared read model follows.
	_, err := f.d.Pool.Exec(f.ctx, `
INSERT INTO outbox (id, type, tenant_id, subject, data)
SELECT gen_random_uuid(), 'node_command.queued', 'acme', 'node_commands/job' || j, jsonb_build_object('id', 'job' || j)
  FROM generate_series(1, $1::int) j`, flood)
	require.NoError(t, err)
	_, err = f.d.Pool.Exec(f.ctx, "VACUUM (ANALYZE) outbox") // as autovacuum would: its pages all-visible
	require.NoError(t, err)

	pool, err := pg.Connect(f.ctx, f.d.URL, pg.PoolOptions{MaxConns: 1, IdleInTxTimeout: time.Minute})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	if mode := pool.Config().ConnConfig.DefaultQueryExecMode; mode != pgx.QueryExecModeCacheStatement {
		t.Skipf("statements are not prepared by name (query exec mode %v): no plan cache to test", mode)
	}
	check := func() {
		t.Helper()
		checks, err := projections.CheckAgainstWriteModel(f.ctx, pool, 100)
		require.NoError(t, err)
		require.Len(t, checks, 5)
		for _, c := range checks {
			require.Positive(t, c.Diverging, c.Table)
			require.Zero(t, c.Behind, "%s: no compared row has an event among the node jobs'", c.Table)
		}
	}
	for range 6 {
		check()
	}
	// Caught up: the projections would have applied these events, which
	// change none of their rows.
	_, err = f.d.Pool.Exec(f.ctx, `
UPDATE outbox_cursors c SET txid = e.txid, seq = e.seq
  FROM (SELECT o.txid, o.seq FROM outbox o ORDER BY o.txid DESC, o.seq DESC LIMIT 1) e
 WHERE c.sink IN ($1, $2, $3)`, projections.NameReservations, projections.NameFleet, projections.NameDeviceHolders)
	require.NoError(t, err)
	for range 3 {
		check()
	}

	conn, err := pool.Acquire(f.ctx)
	require.NoError(t, err)
	defer conn.Release()
	rows, err := conn.Query(f.ctx, `
SELECT name, statement, generic_plans, custom_plans FROM pg_prepared_statements
 WHERE statement LIKE '-- name: RmCheck%' AND statement NOT LIKE '-- name: RmCheckCursors %'`)
	require.NoError(t, err)
	type statement struct {
		name, sql       string
		generic, custom int64
	}
	stmts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (statement, error) {
		var s statement
		return s, r.Scan(&s.name, &s.sql, &s.generic, &s.custom)
	})
	require.NoError(t, err)
	require.Len(t, stmts, 5, "the connection prepared each comparison")
	query := regexp.MustCompile(`^-- name: (\w+)`)
	for _, s := range stmts {
		q := query.FindStringSubmatch(s.sql)[1]

		var txid uint64
		var seq int64
		require.NoError(t, conn.QueryRow(f.ctx, "SELECT txid, seq FROM rm_check_cursor($1)",
			checkQueryProjections[q]).Scan(&txid, &seq))
		args := []any{int32(100), txid, seq}
		_, err = conn.Exec(f.ctx, "SET plan_cache_mode = force_custom_plan")
		require.NoError(t, err)
		plan, err := pgtest.ExplainExecute(f.ctx, conn, s.name, args)
		require.NoError(t, err)
		read := plan.BuffersRead("outbox")
		_, err = conn.Exec(f.ctx, "SET plan_cache_mode = force_generic_plan")
		require.NoError(t, err)
		generic, err := pgtest.ExplainExecute(f.ctx, conn, s.name, args)
		require.NoError(t, err)
		_, err = conn.Exec(f.ctx, "RESET plan_cache_mode")
		require.NoError(t, err)
		t.Logf("%s read %d buffers of the outbox with its custom plan, %d with a generic one", q, read, generic.BuffersRead("outbox"))
		require.Zero(t, s.generic, "%s ran with a generic plan", q)
		require.EqualValues(t, 9, s.custom, "%s: custom plans", q)
		require.LessOrEqual(t, read, 10, "%s: buffers of the outbox read, caught up past %d events", q, flood)
	}
}
