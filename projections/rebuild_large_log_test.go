package projections_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/projections"
)

// TestRebuildLargeLog measures what a rebuild of each Seeder projection
// costs over a large retained log (docs/benchmarks.md, "Rebuilding a read
// model over a large log"): a write model of COMPUTE_LARGE_LOG_NODES nodes
// (4 GPUs each) and COMPUTE_LARGE_LOG_RESERVATIONS reservations made by the
// commands, and a log filled in bulk to COMPUTE_LARGE_LOG_EVENTS events in
// the shape of the real ones: the liveness history of every node, the
// events of reservations like the real ones, and node jobs'. It logs each
// seeding statement's plan (EXPLAIN ANALYZE, BUFFERS) and the seeding
// transaction's time, and the time of the read-model check of `compute
// check`; with COMPUTE_LARGE_LOG_REBUILD=1, each whole rebuild's time and
// the check's again, caught up. It asserts
// nothing about time, and runs only when COMPUTE_LARGE_LOG_EVENTS is set.
func TestRebuildLargeLog(t *testing.T) {
	events := envInt(t, "COMPUTE_LARGE_LOG_EVENTS", 0)
	if events == 0 {
		t.Skip("set COMPUTE_LARGE_LOG_EVENTS (e.g. 1000000) to measure a rebuild over a large log")
	}
	nodes := envInt(t, "COMPUTE_LARGE_LOG_NODES", 300)
	reservations := envInt(t, "COMPUTE_LARGE_LOG_RESERVATIONS", 3000)
	f := setup(t)
	ctx := f.ctx

	for _, tn := range []string{tenantA.Tenant, tenantB.Tenant} {
		_, err := f.h.SetQuota(ctx, operator, commands.SetQuota{Tenant: tn, Resource: "gpu", Max: int64(reservations)})
		require.NoError(t, err)
	}
	start := time.Now()
	for i := range nodes {
		f.node(t, fmt.Sprintf("n%04d", i), exclusive, exclusive, exclusive, exclusive)
	}
	gpus := nodes * 4
	for i := range reservations {
		w := float64(2 * (i / gpus)) // as many 2-hour windows as it takes
		actor := tenantA
		if i%2 == 1 {
			actor = tenantB
		}
		r := f.reserve(t, actor, commands.CreateReservation{GPUs: 1, VCPU: 2, MemoryMB: 1024, DiskGB: 10,
			Start: at(1 + w), End: at(3 + w)})
		if i%3 == 0 { // released before it began: version 2, its bookings withdrawn
			_, err := f.h.ReleaseReservation(ctx, actor, commands.ReleaseReservation{ReservationID: r.Reservation.ID})
			require.NoError(t, err)
		}
	}
	t.Logf("write model: %d nodes, %d reservations by the commands in %s", nodes, reservations, time.Since(start))

	// The log, in bulk: a third each of node liveness history (the nodes'
	// versions move on to match), reservation events (copies of the real
	// ones for other reservations, as a long-running fleet's log holds
	// mostly reservations that ended) and node jobs' events.
	start = time.Now()
	var have int
	require.NoError(t, f.d.Pool.QueryRow(ctx, "SELECT count(*) FROM outbox").Scan(&have))
	left := max(events-have, 0)
	perNode := left / 3 / nodes
	_, err := f.d.Pool.Exec(ctx, `
INSERT INTO outbox (id, type, tenant_id, subject, data, time)
SELECT gen_random_uuid(), CASE WHEN j % 2 = 0 THEN 'node.disconnected' ELSE 'node.connected' END, NULL, 'nodes/' || n.id,
       jsonb_build_object('id', n.id, 'poolId', n.pool_id, 'state', CASE WHEN j % 2 = 0 THEN 'disconnected' ELSE 'ready' END,
                          'previousState', CASE WHEN j % 2 = 0 THEN 'ready' ELSE 'disconnected' END,
                          'noScheduleReasons', '[]'::jsonb, 'conditions', '[]'::jsonb, 'version', n.version + j),
       compute_now() - make_interval(secs => $1 - j)
  FROM nodes n CROSS JOIN generate_series(1, $1::int) j
 ORDER BY j, n.id`, perNode)
	require.NoError(t, err)
	_, err = f.d.Pool.Exec(ctx, "UPDATE nodes SET version = version + $1", perNode)
	require.NoError(t, err)
	var resEvents int
	require.NoError(t, f.d.Pool.QueryRow(ctx, "SELECT count(*) FROM outbox WHERE type LIKE 'reservation.%'").Scan(&resEvents))
	copies := max(left/3/max(resEvents, 1), 1)
	_, err = f.d.Pool.Exec(ctx, `
INSERT INTO outbox (id, type, tenant_id, subject, data, time)
SELECT gen_random_uuid(), o.type, o.tenant_id, 'reservations/' || c.id, jsonb_set(o.data, '{id}', to_jsonb(c.id)),
       o.time - make_interval(days => k)
  FROM generate_series(1, $1::int) k CROSS JOIN outbox o
  CROSS JOIN LATERAL (SELECT md5(o.subject || k)::uuid::text AS id) c
 WHERE o.type LIKE 'reservation.%'
 ORDER BY k, o.txid, o.seq`, copies)
	require.NoError(t, err)
	require.NoError(t, f.d.Pool.QueryRow(ctx, "SELECT count(*) FROM outbox").Scan(&have))
	_, err = f.d.Pool.Exec(ctx, `
INSERT INTO outbox (id, type, tenant_id, subject, data, time)
SELECT gen_random_uuid(), (ARRAY['node_command.queued', 'node_command.sent', 'node_command.succeeded'])[j % 3 + 1],
       'acme', 'node_commands/' || c.id,
       jsonb_build_object('id', c.id, 'nodeId', 'n0000', 'kind', 'instance.start', 'state',
                          (ARRAY['queued', 'sent', 'succeeded'])[j % 3 + 1], 'version', j % 3 + 1),
       compute_now()
  FROM generate_series(0, greatest($1::int - 1, 0)) j
  CROSS JOIN LATERAL (SELECT md5('job' || (j / 3))::uuid::text AS id) c`, max(events-have, 0))
	require.NoError(t, err)
	_, err = f.d.Pool.Exec(ctx, "ANALYZE")
	require.NoError(t, err)
	var size string
	require.NoError(t, f.d.Pool.QueryRow(ctx,
		"SELECT count(*), pg_size_pretty(pg_total_relation_size('outbox')) FROM outbox").Scan(&have, &size))
	t.Logf("log: %d events (%s with indexes) in %s", have, size, time.Since(start))

	seeds := seedStatements(t)
	for _, p := range projections.All() {
		s, ok := p.(projections.Seeder)
		if !ok {
			continue
		}
		// The first transaction of the rebuild, rolled back: the plans of
		// its statements, then the statements as Seed runs them.
		err := pg.InTx(ctx, f.d.Pool, func(tx pgx.Tx) error {
			q := db.New(tx)
			require.NoError(t, q.RmRebuildPrepare(ctx, p.Tables()))
			require.NoError(t, q.RmRebuildUseShadow(ctx))
			_, err := tx.Exec(ctx, "SET LOCAL jit = off") // as Rebuild seeds
			require.NoError(t, err)
			for _, table := range p.Tables() {
				name := seeds[table]
				_, err := tx.Exec(ctx, "SAVEPOINT explain")
				require.NoError(t, err)
				rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+seedSQL(t, name))
				require.NoError(t, err)
				var plan []string
				for rows.Next() {
					var line string
					require.NoError(t, rows.Scan(&line))
					plan = append(plan, line)
				}
				require.NoError(t, rows.Err())
				_, err = tx.Exec(ctx, "ROLLBACK TO SAVEPOINT explain")
				require.NoError(t, err)
				t.Logf("%s %s:\n%s", p.ID(), name, strings.Join(plan, "\n"))
			}
			start := time.Now()
			require.NoError(t, s.Seed(ctx, tx))
			t.Logf("%s: Seed took %s", p.ID(), time.Since(start))
			return errRollback
		})
		require.ErrorIs(t, err, errRollback)
	}
	logCheck(t, f, "no projection has run: every cursor before the whole log")
	if os.Getenv("COMPUTE_LARGE_LOG_REBUILD") == "1" {
		for _, name := range []string{projections.NameFleet, projections.NameDeviceHolders, projections.NameReservations} {
			start := time.Now()
			res, err := projections.Rebuild(ctx, f.d.Pool, name)
			require.NoError(t, err)
			t.Logf("%s: rebuild of %d events took %s", name, res.Events, time.Since(start))
		}
		logCheck(t, f, "rebuilt: every cursor at the end of the log")
	}
}

// logCheck logs what the read-model check of `compute check` takes and
// finds (projections.CheckAgainstWriteModel), over COMPUTE_LARGE_LOG_CHECK_RUNS
// runs (5 by default) on one pooled connection, as a long-running process
// would repeat it, and their median. The log's bulk reservation events are
// of reservations the write model does not have: once projected, their rows
// are extra.
func logCheck(t *testing.T, f *fixture, when string) {
	t.Helper()
	runs := envInt(t, "COMPUTE_LARGE_LOG_CHECK_RUNS", 5)
	pool, err := pg.Connect(f.ctx, f.d.URL, pg.PoolOptions{MaxConns: 1})
	require.NoError(t, err)
	defer pool.Close()
	var took []time.Duration
	var found []string
	for range runs {
		start := time.Now()
		checks, err := projections.CheckAgainstWriteModel(f.ctx, pool, 20)
		require.NoError(t, err)
		took = append(took, time.Since(start))
		found = found[:0]
		for _, c := range checks {
			found = append(found, fmt.Sprintf("%s %d diverging, %d behind", c.Table, c.Diverging, c.Behind))
		}
	}
	sorted := slices.Clone(took)
	slices.Sort(sorted)
	t.Logf("check (%s), %d runs, median %s: %v: %s", when, runs, sorted[len(sorted)/2], took, strings.Join(found, "; "))
	var plans string
	require.NoError(t, pool.QueryRow(f.ctx,
		`SELECT coalesce(string_agg(format('%s custom %s generic %s', substring(statement from '-- name: (\w+)'), custom_plans, generic_plans), '; '), '')
		   FROM pg_prepared_statements WHERE statement LIKE '-- name: RmCheck%'`).Scan(&plans))
	t.Logf("check (%s), plans the connection used: %s", when, plans)
	logCheckPlans(t, f, when)
}

// checkQueryProjections names the projection whose cursor each read-model
// check query (sql/queries/rm_check.sql) reads.
var checkQueryProjections = map[string]string{
	"RmCheckReservations": projections.NameReservations, "RmCheckFleetNodes": projections.NameFleet,
	"RmCheckFleetDevices": projections.NameFleet, "RmCheckFleetAllocations": projections.NameFleet,
	"RmCheckDeviceHolders": projections.NameDeviceHolders,
}

// logCheckPlans logs the plan and time of each read-model check query
// (EXPLAIN (ANALYZE, BUFFERS)), run as the check runs it: in one REPEATABLE
// READ snapshot with JIT off, each with its projection's cursor as read in
// that snapshot where the query takes it (sqlc.arg(after_txid),
// sqlc.arg(after_seq)), and a custom plan.
func logCheckPlans(t *testing.T, f *fixture, when string) {
	t.Helper()
	arg := regexp.MustCompile(`sqlc\.arg\((\w+)\)`)
	err := pgx.BeginTxFunc(f.ctx, f.d.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		_, err := tx.Exec(f.ctx, "SET LOCAL jit = off")
		require.NoError(t, err)
		for _, name := range []string{"RmCheckReservations", "RmCheckFleetNodes", "RmCheckFleetDevices", "RmCheckFleetAllocations", "RmCheckDeviceHolders"} {
			var txid, seq string
			require.NoError(t, tx.QueryRow(f.ctx,
				"SELECT coalesce(max(txid), '0')::text, coalesce(max(seq), 0)::text FROM outbox_cursors WHERE sink = $1",
				checkQueryProjections[name]).Scan(&txid, &seq))
			values := map[string]string{"sample_size": "20", "after_txid": "'" + txid + "'::xid8", "after_seq": seq}
			text := arg.ReplaceAllStringFunc(seedSQL(t, name), func(m string) string {
				v, ok := values[arg.FindStringSubmatch(m)[1]]
				require.True(t, ok, "%s: no value for %s", name, m)
				return v
			})
			start := time.Now()
			rows, err := tx.Query(f.ctx, "EXPLAIN (ANALYZE, BUFFERS) "+text)
			require.NoError(t, err)
			var plan []string
			for rows.Next() {
				var line string
				require.NoError(t, rows.Scan(&line))
				plan = append(plan, line)
			}
			require.NoError(t, rows.Err())
			t.Logf("%s (%s), cursor (%s, %s), %s:\n%s", name, when, txid, seq, time.Since(start), strings.Join(plan, "\n"))
			if strings.Contains(seedSQL(t, name), "sqlc.arg(after_txid)") {
				logGenericPlan(t, f, tx, name, when, txid, seq)
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// logGenericPlan logs what the check query name reads of the log, and
// takes, with the generic plan a pooled connection may settle on after five
// runs, which does not know the cursor (txid, seq) it is run with.
func logGenericPlan(t *testing.T, f *fixture, tx pgx.Tx, name, when, txid, seq string) {
	t.Helper()
	params := map[string]string{"sample_size": "$1", "after_txid": "$2", "after_seq": "$3"}
	text := regexp.MustCompile(`sqlc\.arg\((\w+)\)`).ReplaceAllStringFunc(seedSQL(t, name), func(m string) string {
		return params[m[len("sqlc.arg("):len(m)-1]]
	})
	for _, stmt := range []string{
		"SET LOCAL plan_cache_mode = force_generic_plan",
		"PREPARE check_generic (int, xid8, bigint) AS " + text,
	} {
		_, err := tx.Exec(f.ctx, stmt)
		require.NoError(t, err, stmt)
	}
	start := time.Now()
	plan, err := pgtest.ExplainExecute(f.ctx, tx, "check_generic", []any{20, txid, seq})
	require.NoError(t, err)
	took := time.Since(start)
	for _, stmt := range []string{"DEALLOCATE check_generic", "SET LOCAL plan_cache_mode = force_custom_plan"} {
		_, err := tx.Exec(f.ctx, stmt)
		require.NoError(t, err, stmt)
	}
	t.Logf("%s (%s), generic plan: %s, %d buffers of the outbox", name, when, took, plan.BuffersRead("outbox"))
}

var errRollback = fmt.Errorf("rolled back")

// seedStatements names the statement that seeds each table.
func seedStatements(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{
		"rm_fleet_pools": "RmFleetPoolSeed", "rm_fleet_nodes": "RmFleetNodeSeed",
		"rm_fleet_devices": "RmFleetDeviceSeed", "rm_fleet_allocations": "RmFleetAllocationSeed",
		"rm_device_holders": "RmDeviceHolderSeed", "rm_reservations": "RmReservationSeed",
	}
}

// seedSQL is the text of query name from sql/queries.
func seedSQL(t *testing.T, name string) string {
	t.Helper()
	files, err := os.ReadDir("../sql/queries")
	require.NoError(t, err)
	head := regexp.MustCompile(`(?m)^-- name: (\w+) :\w+\n`)
	for _, fi := range files {
		b, err := os.ReadFile("../sql/queries/" + fi.Name())
		require.NoError(t, err)
		text := string(b)
		locs := head.FindAllStringSubmatchIndex(text, -1)
		for i, l := range locs {
			if text[l[2]:l[3]] != name {
				continue
			}
			end := len(text)
			if i+1 < len(locs) {
				end = locs[i+1][0]
			}
			return strings.TrimRight(strings.TrimSpace(text[l[1]:end]), ";")
		}
	}
	t.Fatalf("no query %s", name)
	return ""
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, name)
	return n
}
