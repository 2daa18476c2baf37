package commands_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// TestBookingLookupsNeverUseTheGiSTIndex holds every statement that looks
// up a device's bookings to the btree device_bookings_device_end, whatever
// the table's statistics when a connection plans it. On PostgreSQL 15.18 a
// GiST index scan rescanned on the inner side of a loop can lose the
// index's entries (migration 0027), so the GiST index behind the exclusion
// constraint must never serve these lookups. Written as NOT EXISTS, the
// lookup became an anti-join, and right after a VACUUM of an empty
// device_bookings (a new fleet, or an idle one) the cached generic plan of
// the candidates query scanned that GiST index whole for every device
// (found by the benchmark, docs/benchmarks/history.md). Each statement here is the
// one a real command sent, planned generically on a fresh connection in that
// state.
func TestBookingLookupsNeverUseTheGiSTIndex(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	capture := newStatementCapture()
	pool := preparedPool(t, d.URL, 2, capture)
	h := commands.New(pool, commands.Config{PlacementSample: 200}) // every node a candidate
	commandstest.Seed(t, d, h, 2)
	ctx := context.Background()
	for n := range 100 {
		commandstest.Node(t, h, fmt.Sprintf("n%d", n), exclusive, exclusive, exclusive, exclusive,
			exclusive, exclusive, exclusive, exclusive)
	}
	// The best fit for two GPUs, whose atoms the candidates query does not
	// list (two models): its create reads them under the lock, with
	// DeviceFreeAtoms, as every replan does.
	_, err := h.RegisterNode(ctx, commandstest.Operator, commands.RegisterNode{ID: "mixed", PoolID: commandstest.Pool,
		VCPU: 64, MemoryMB: 1024, DiskGB: 100, GPUs: []commands.GPUInventory{
			{UUID: "GPU-mixed-0", Model: "a100", MemoryMB: 81920, Layout: exclusive},
			{UUID: "GPU-mixed-1", Model: "h100", MemoryMB: 81920, Layout: exclusive}}})
	require.NoError(t, err)
	start, end := window(1, 2)
	res, err := h.CreateReservation(ctx, tenantA, commands.CreateReservation{PoolID: commandstest.Pool, GPUs: 2,
		Start: start, End: end})
	require.NoError(t, err)
	require.Equal(t, core.ReservationBooked, res.Reservation.State)
	require.Equal(t, "mixed", res.Reservation.NodeID)
	_, err = h.ExtendReservation(ctx, tenantA, commands.ExtendReservation{ReservationID: res.Reservation.ID,
		NewEnd: end.Add(time.Hour)})
	require.NoError(t, err)
	_, err = h.ReleaseReservation(ctx, tenantA, commands.ReleaseReservation{ReservationID: res.Reservation.ID})
	require.NoError(t, err)
	// As autovacuum leaves an idle fleet: its bookings gone, the table
	// truncated, its statistics saying so.
	_, err = pool.Exec(ctx, "VACUUM ANALYZE device_bookings, devices, nodes")
	require.NoError(t, err)
	// Then the first bookings again: the table is one page.
	for range 3 {
		res, err = h.CreateReservation(ctx, tenantA, commands.CreateReservation{PoolID: commandstest.Pool, GPUs: 2,
			Start: start, End: end})
		require.NoError(t, err)
		require.Equal(t, core.ReservationBooked, res.Reservation.State)
	}

	lookups := []string{"NodePlacementCandidates", "DeviceFreeAtoms", "AllocationCreateWithBookings", "DeviceBookingInsert"}
	for _, name := range lookups {
		sql, _ := capture.last(name)
		require.NotEmpty(t, sql, "no command sent %s", name)
		// A seq scan of a table this small is fair; the GiST index never is.
		plan := genericPlan(t, d.URL, sql, "SET plan_cache_mode = force_generic_plan")
		require.NotContains(t, plan, "device_bookings_no_overlap", "%s planned on the GiST index:\n%s", name, plan)
		// As a placing transaction plans them: sequential and bitmap
		// scans off (planBookingLookups).
		plan = genericPlan(t, d.URL, sql, "SET plan_cache_mode = force_generic_plan", "SET enable_seqscan = off",
			"SET enable_bitmapscan = off")
		require.NotContains(t, plan, "device_bookings_no_overlap", "%s planned on the GiST index:\n%s", name, plan)
		require.Contains(t, plan, "Index Scan using device_bookings_device_end", "%s does not look bookings up through the btree:\n%s", name, plan)
		// A bitmap scan never marks the index entries of deleted bookings
		// dead, so every later lookup of the device reads them all again
		// (seen in the benchmark, not in this state: a check of the shape).
		require.NotContains(t, plan, "Bitmap Heap Scan on device_bookings", "%s looks bookings up by a bitmap scan:\n%s", name, plan)
	}
}

// genericPlan is EXPLAIN of sql's generic plan, prepared on a connection of
// its own, after the settings, as a pool's connection would cache it.
func genericPlan(t *testing.T, url, sql string, settings ...string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	for _, set := range settings {
		_, err = conn.Exec(ctx, set)
		require.NoError(t, err)
	}
	_, err = conn.Exec(ctx, "PREPARE lookup AS "+sql)
	require.NoError(t, err)
	var params int
	require.NoError(t, conn.QueryRow(ctx,
		"SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = 'lookup'").Scan(&params))
	nulls := strings.TrimSuffix(strings.Repeat("NULL, ", params), ", ")
	rows, err := conn.Query(ctx, "EXPLAIN EXECUTE lookup("+nulls+")", pgx.QueryExecModeSimpleProtocol)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}
