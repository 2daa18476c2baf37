package projections_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/projections"
)

// A read-model row changed behind its projection's back (a bug, a lost
// write, a hand edit) is reported by the comparison `compute check` makes,
// with its kind and the rebuild that repairs it; after that rebuild the
// read models agree again.
func TestCheckReportsACorruptedReadModel(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rs := f.scenario(t)
	f.catchUp(t)
	before := f.checkAgainstWriteModel(t)
	for table := range before {
		requireAgrees(t, before, table)
	}
	a, p2 := rs["a"].Reservation.ID, rs["p2"].Reservation.ID
	for _, stmt := range []string{
		"UPDATE rm_reservations SET state = 'released' WHERE id = '" + a + "'",
		"DELETE FROM rm_fleet_nodes WHERE id = 'n3'",
		"UPDATE rm_fleet_nodes SET vcpu = vcpu + 1 WHERE id = 'n2'",
		`INSERT INTO rm_fleet_nodes SELECT (jsonb_populate_record(NULL::rm_fleet_nodes, to_jsonb(m) || '{"id": "ghost"}')).*
		   FROM rm_fleet_nodes m WHERE m.id = 'n1'`,
		"UPDATE rm_fleet_devices SET quarantined = false WHERE id = 'GPU-n3-0'",
		"UPDATE rm_fleet_allocations SET live = NOT live WHERE reservation_id = '" + p2 + "'",
		"UPDATE rm_device_holders SET during = tstzrange(lower(during), upper(during) + interval '1 hour') WHERE reservation_id = '" + p2 + "'",
	} {
		_, err := f.d.Pool.Exec(f.ctx, stmt)
		require.NoError(t, err, stmt)
	}
	var p2Devices []string
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT array_agg(device_id ORDER BY device_id) FROM rm_device_holders WHERE reservation_id = $1",
		p2).Scan(&p2Devices))
	require.Len(t, p2Devices, 2)

	checks := f.checkAgainstWriteModel(t)
	want := map[string][]projections.DivergentRow{
		"rm_reservations": {{Key: a, Kind: projections.DivergenceDiffers}},
		"rm_fleet_nodes": {{Key: "ghost", Kind: projections.DivergenceExtra},
			{Key: "n2", Kind: projections.DivergenceDiffers}, {Key: "n3", Kind: projections.DivergenceMissing}},
		"rm_fleet_devices":     {{Key: "GPU-n3-0", Kind: projections.DivergenceDiffers}},
		"rm_fleet_allocations": {{Key: p2, Kind: projections.DivergenceDiffers}},
		"rm_device_holders": {{Key: p2Devices[0] + " held by " + p2, Kind: projections.DivergenceDiffers},
			{Key: p2Devices[1] + " held by " + p2, Kind: projections.DivergenceDiffers}},
	}
	repair := map[string]string{
		"rm_reservations":      "compute projections rebuild reservations",
		"rm_fleet_nodes":       "compute projections rebuild fleet",
		"rm_fleet_devices":     "compute projections rebuild fleet",
		"rm_fleet_allocations": "compute projections rebuild fleet",
		"rm_device_holders":    "compute projections rebuild device-holders",
	}
	for table, rows := range want {
		c := checks[table]
		require.Equal(t, rows, c.Rows, table)
		require.EqualValues(t, len(rows), c.Diverging, table)
		require.Zero(t, c.Behind, table)
		require.Equal(t, repair[table], c.Repair(), table)
	}

	for _, name := range []string{projections.NameReservations, projections.NameFleet, projections.NameDeviceHolders} {
		_, err := projections.Rebuild(f.ctx, f.d.Pool, name)
		require.NoError(t, err, name)
	}
	for table, c := range f.checkAgainstWriteModel(t) {
		require.Empty(t, c.Rows, "%s after its rebuild", table)
		require.Zero(t, c.Diverging, "%s after its rebuild", table)
	}
}

// Lag is not divergence: rows whose events the projection has not applied
// yet disagree with the write model, and are counted as behind, not as
// diverging; a row corrupted meanwhile is still reported, and once the
// projections catch up nothing is behind.
func TestCheckDoesNotCountLagAsDivergence(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rs := f.scenario(t)
	f.catchUp(t)

	// Written, not yet projected: a cordon, a taint, a quarantine and a
	// new booking.
	_, err := f.h.CordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n1"})
	require.NoError(t, err)
	_, err = f.h.TaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n2", Taint: "flaky"})
	require.NoError(t, err)
	_, err = f.h.QuarantineDevice(f.ctx, operator, commands.QuarantineDevice{DeviceID: "GPU-n3-0"})
	require.NoError(t, err)
	_, err = f.h.UnquarantineDevice(f.ctx, operator, commands.QuarantineDevice{DeviceID: "GPU-n3-0"})
	require.NoError(t, err)
	fresh := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: at(20), End: at(21)})
	require.Len(t, fresh.Reservation.DeviceIDs, 1)
	// And one row, whose events are all applied, corrupted meanwhile.
	b := rs["b"].Reservation.ID
	_, err = f.d.Pool.Exec(f.ctx, "UPDATE rm_reservations SET priority = 7 WHERE id = $1", b)
	require.NoError(t, err)

	checks := f.checkAgainstWriteModel(t)
	for table, behind := range map[string]int64{
		"rm_reservations":      1, // fresh, missing
		"rm_fleet_nodes":       2, // n1 cordoned, n2 tainted
		"rm_fleet_devices":     1, // GPU-n3-0, at a newer version
		"rm_fleet_allocations": 1, // fresh's, missing
		"rm_device_holders":    1, // fresh's GPU, missing
	} {
		require.Equal(t, behind, checks[table].Behind, table)
	}
	require.Equal(t, []projections.DivergentRow{{Key: b, Kind: projections.DivergenceDiffers}}, checks["rm_reservations"].Rows)
	require.EqualValues(t, 1, checks["rm_reservations"].Diverging)
	for _, table := range []string{"rm_fleet_nodes", "rm_fleet_devices", "rm_fleet_allocations", "rm_device_holders"} {
		require.Empty(t, checks[table].Rows, table)
		require.Zero(t, checks[table].Diverging, table)
	}

	f.catchUp(t)
	checks = f.checkAgainstWriteModel(t)
	for table, c := range checks {
		require.Zero(t, c.Behind, "%s caught up", table)
	}
	require.Equal(t, []projections.DivergentRow{{Key: b, Kind: projections.DivergenceDiffers}}, checks["rm_reservations"].Rows,
		"no event of b came since: the projection did not repair it")
}

// A rebuild that swaps its fresh tables in while the check runs makes no
// row look missing: the check locks the read models before its snapshot,
// so it waits for the swap and then sees the new tables' rows. Taking the
// snapshot first, it saw the swapped-in table empty: every node missing.
func TestCheckDuringARebuildSwap(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.scenario(t)
	f.catchUp(t)

	swap, err := f.d.Pool.Begin(f.ctx)
	require.NoError(t, err)
	defer func() { _ = swap.Rollback(f.ctx) }()
	for _, stmt := range []string{
		"SELECT rm_rebuild_prepare(ARRAY['rm_fleet_nodes'])",
		"INSERT INTO rm_rebuild.rm_fleet_nodes SELECT * FROM public.rm_fleet_nodes",
		"SELECT rm_rebuild_swap(ARRAY['rm_fleet_nodes'])",
	} {
		_, err := swap.Exec(f.ctx, stmt)
		require.NoError(t, err, stmt)
	}
	var swapPID int
	require.NoError(t, swap.QueryRow(f.ctx, "SELECT pg_backend_pid()").Scan(&swapPID))

	type result struct {
		checks []projections.ReadModelCheck
		err    error
	}
	done := make(chan result, 1)
	go func() {
		checks, err := projections.CheckAgainstWriteModel(f.ctx, f.d.Pool, 100)
		done <- result{checks, err}
	}()
	require.Eventually(t, func() bool { // the check waits for the swap's lock
		var waiting bool
		require.NoError(t, f.d.Pool.QueryRow(f.ctx,
			"SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid)))", swapPID).Scan(&waiting))
		return waiting
	}, waitFor, 2*time.Millisecond)
	require.NoError(t, swap.Commit(f.ctx))

	var r result
	select {
	case r = <-done:
	case <-time.After(waitFor):
		t.Fatal("the check did not finish after the swap")
	}
	require.NoError(t, r.err)
	for _, c := range r.checks {
		require.Empty(t, c.Rows, c.Table)
		require.Zero(t, c.Diverging, c.Table)
	}
}
