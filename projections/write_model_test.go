package projections_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// After every kind of command, each read model agrees with the write
// tables it mirrors.
func TestProjectionsMatchWriteModel(t *testing.T) {
	t.Parallel()
	f := setup(t)
	rs := f.scenario(t)
	f.catchUp(t)
	ctx := f.ctx

	t.Run("reservations", func(t *testing.T) {
		rows, err := f.d.Pool.Query(ctx, `SELECT r.id, r.tenant_id, r.state, r.version, upper(r.during), r.conditions,
		       m.tenant_id, m.state, m.version, m.end_ts, m.conditions,
		       (r.priority_class, r.priority, r.preemptible) IS NOT DISTINCT FROM (m.priority_class, m.priority, m.preemptible)
		  FROM reservations r LEFT JOIN rm_reservations m ON m.id = r.id ORDER BY r.id`)
		require.NoError(t, err)
		defer rows.Close()
		n := 0
		for rows.Next() {
			var id, tenant, state string
			var version int64
			var end time.Time
			var conds []byte
			var mTenant, mState *string
			var mVersion *int64
			var mEnd *time.Time
			var mConds []byte
			var samePriority bool
			require.NoError(t, rows.Scan(&id, &tenant, &state, &version, &end, &conds, &mTenant, &mState, &mVersion, &mEnd, &mConds,
				&samePriority))
			require.NotNil(t, mState, "reservation %s is in the read model", id)
			require.Equal(t, tenant, *mTenant, id)
			require.Equal(t, state, *mState, id)
			require.Equal(t, version, *mVersion, id)
			require.True(t, end.Equal(*mEnd), id)
			require.JSONEq(t, string(conds), string(mConds), id)
			require.True(t, samePriority, "%s: priority class, priority and preemptible", id)
			n++
		}
		require.NoError(t, rows.Err())
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
		var mismatches int
		require.NoError(t, f.d.Pool.QueryRow(ctx, `
		SELECT count(*) FROM nodes n
		  FULL JOIN rm_fleet_nodes m ON m.id = n.id
		 WHERE m.id IS NULL OR n.id IS NULL OR m.cordoned <> n.cordoned OR m.taints <> n.taints
		    OR m.version <> n.version OR m.pool_id <> n.pool_id`).Scan(&mismatches))
		require.Zero(t, mismatches)
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
		var mismatches int
		require.NoError(t, f.d.Pool.QueryRow(ctx, `
		SELECT count(*) FROM devices d
		  FULL JOIN rm_fleet_devices m ON m.id = d.id
		 WHERE m.id IS NULL OR d.id IS NULL
		    OR m.parent_id IS DISTINCT FROM d.parent_id OR m.kind <> d.kind OR m.node_id <> d.node_id
		    OR m.mode IS DISTINCT FROM d.mode OR m.profile IS DISTINCT FROM d.profile OR m.retired <> d.retired
		    OR (d.kind = 'gpu' AND (m.health <> d.health OR m.quarantined <> d.quarantined OR m.version <> d.version))`).Scan(&mismatches))
		require.Zero(t, mismatches)
		var retired int
		require.NoError(t, f.d.Pool.QueryRow(ctx, "SELECT count(*) FROM rm_fleet_devices WHERE retired").Scan(&retired))
		require.Equal(t, 2, retired, "time-slice slots 2 and 3 retired by the MPS layout of 2")
	})

	t.Run("holders are the bookings", func(t *testing.T) {
		var mismatches int
		require.NoError(t, f.d.Pool.QueryRow(ctx, `
		WITH booked AS (
		  SELECT b.device_id, a.reservation_id, tstzrange(min(lower(b.during)), max(upper(b.during)), '[)') AS during
		    FROM device_bookings b JOIN allocations a ON a.id = b.allocation_id
		   GROUP BY b.device_id, a.reservation_id),
		held AS (SELECT device_id, reservation_id, during FROM rm_device_holders WHERE NOT isempty(during))
		SELECT count(*) FROM booked FULL JOIN held USING (device_id, reservation_id)
		 WHERE booked.during IS DISTINCT FROM held.during`).Scan(&mismatches))
		require.Zero(t, mismatches)
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
