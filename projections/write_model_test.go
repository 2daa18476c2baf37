package projections_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// After every kind of command, each read model agrees with the write
// tables it mirrors: by the comparison `compute check` makes
// (projections.CheckAgainstWriteModel), with nothing left behind, and by
// the values below.
func TestProjectionsMatchWriteModel(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rs := f.scenario(t)
	f.catchUp(t)
	ctx := f.ctx
	checks := f.checkAgainstWriteModel(t)

	t.Run("reservations", func(t *testing.T) {
		requireAgrees(t, checks, "rm_reservations")
		var n int
		require.NoError(t, f.d.Pool.QueryRow(ctx, "SELECT count(*) FROM reservations").Scan(&n))
		require.Equal(t, len(rs), n)
		got, err := f.d.Q.RmReservationGet(ctx, rs["a"].Reservation.ID)
		require.NoError(t, err)
		require.Equal(t, string(core.ReservationExpired), got.State)
		require.Equal(t, rs["a"].Reservation.DeviceIDs, got.DeviceIds, "where it ran stays known after it ends")
		b, err := f.d.Q.RmReservationGet(ctx, rs["b"].Reservation.ID)
		require.NoError(t, err)
		require.Equal(t, "batch", b.PriorityClass)
		require.EqualValues(t, -10, b.Priority)
		require.True(t, b.Preemptible)
		require.Equal(t, "standard", got.PriorityClass)
	})

	t.Run("nodes and utilization", func(t *testing.T) {
		requireAgrees(t, checks, "rm_fleet_nodes")
		requireAgrees(t, checks, "rm_fleet_allocations")
		for _, id := range []string{"n1", "n2", "n3"} {
			got, err := f.d.Q.RmFleetNodeGet(ctx, id)
			require.NoError(t, err)
			want := map[string][2]int64{}
			rows, err := f.d.Pool.Query(ctx, "SELECT resource, allocated, floor(allocatable * ratio)::bigint FROM node_resources WHERE node_id = $1", id)
			require.NoError(t, err)
			for rows.Next() {
				var r string
				var a, c int64
				require.NoError(t, rows.Scan(&r, &a, &c))
				want[r] = [2]int64{a, c}
			}
			require.NoError(t, rows.Err())
			require.Equal(t, want["vcpu"], [2]int64{got.VcpuAllocated, got.VcpuCapacity}, id)
			require.Equal(t, want["memory"], [2]int64{got.MemoryAllocated, got.MemoryCapacity}, id)
			require.Equal(t, want["disk"], [2]int64{got.DiskAllocated, got.DiskCapacity}, id)
		}
		n1, err := f.d.Q.RmFleetNodeGet(ctx, "n1")
		require.NoError(t, err)
		require.Equal(t, int64(1), n1.LiveReservations, "p2 holds n1")
		require.Equal(t, int64(128), n1.VcpuCapacity, "the pool's vCPU ratio 2 doubles 64 vCPU")
	})

	t.Run("devices", func(t *testing.T) {
		requireAgrees(t, checks, "rm_fleet_devices")
		var retired int
		require.NoError(t, f.d.Pool.QueryRow(ctx, "SELECT count(*) FROM rm_fleet_devices WHERE retired").Scan(&retired))
		require.Equal(t, 2, retired, "time-slice slots 2 and 3 retired by the MPS layout of 2")
	})

	t.Run("holders are the bookings", func(t *testing.T) {
		requireAgrees(t, checks, "rm_device_holders")
		var withdrawn int
		require.NoError(t, f.d.Pool.QueryRow(ctx, "SELECT count(*) FROM rm_device_holders WHERE isempty(during)").Scan(&withdrawn))
		require.Equal(t, 1, withdrawn, "the later booking, released before it began")
	})

	t.Run("pool capacity", func(t *testing.T) {
		got, err := f.d.Q.RmFleetPoolCapacity(ctx, "fra1-gpu")
		require.NoError(t, err)
		var cap_, alloc int64
		require.NoError(t, f.d.Pool.QueryRow(ctx, "SELECT capacity, allocated FROM pool_capacity_rollup WHERE pool_id = 'fra1-gpu' AND resource = 'vcpu'").Scan(&cap_, &alloc))
		require.Equal(t, [2]int64{cap_, alloc}, [2]int64{got.VcpuCapacity, got.VcpuAllocated})
		require.Equal(t, int64(3), got.Nodes)
	})

	t.Run("usage windows", func(t *testing.T) {
		// a: [0 h, 4 h) (extended), 1 GPU; c: [0.5 h, 0.75 h), 2 slots;
		// p2: booked at 5.75 h until 8 h, 2 GPUs.
		for id, want := range map[string][2]int64{
			rs["a"].Reservation.ID:  {4 * 3600_000, 4 * 3600_000},
			rs["c"].Reservation.ID:  {900_000, 2 * 900_000},
			rs["p2"].Reservation.ID: {9000_000 - 900_000, 2 * (9000_000 - 900_000)},
		} {
			var reserved, device int64
			require.NoError(t, f.d.Pool.QueryRow(ctx, "SELECT coalesce(sum(reserved_ms), 0), coalesce(sum(device_ms), 0) FROM rm_usage_windows WHERE reservation_id = $1", id).Scan(&reserved, &device))
			require.Equal(t, want, [2]int64{reserved, device}, id)
		}
		var keys []string
		rows, err := f.d.Pool.Query(ctx, "SELECT key FROM rm_usage_windows WHERE reservation_id = $1 ORDER BY key", rs["p2"].Reservation.ID)
		require.NoError(t, err)
		for rows.Next() {
			var k string
			require.NoError(t, rows.Scan(&k))
			keys = append(keys, k)
		}
		var alloc string // keyed by allocation, not reservation
		require.NoError(t, f.d.Pool.QueryRow(ctx, "SELECT id FROM allocations WHERE reservation_id = $1", rs["p2"].Reservation.ID).Scan(&alloc))
		require.Equal(t, []string{
			"cmp:" + alloc + ":2030-01-01T05:00:00Z",
			"cmp:" + alloc + ":2030-01-01T06:00:00Z",
			"cmp:" + alloc + ":2030-01-01T07:00:00Z",
		}, keys)
		var final bool
		require.NoError(t, f.d.Pool.QueryRow(ctx, "SELECT bool_and(final) FROM rm_usage_windows WHERE reservation_id = $1", rs["a"].Reservation.ID).Scan(&final))
		require.True(t, final, "a expired: its windows are final")
	})
}
