package projections_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/projections"
)

// Usage windows are keyed cmp:<allocationId>:<windowStart>, by the write
// model's allocation and not by the reservation: the reservation events
// carry the allocation id and the scalars reserved, and the windows take
// them. A log written before the events carried them (replayed by a
// rebuild) keys its windows by allocation all the same.
func TestUsageWindowKeyIsAllocation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, GPUModel: "a100", VCPU: 4, MemoryMB: 2048,
		DiskGB: 20, Start: at(0), End: at(2)})
	id := res.Reservation.ID
	f.d.AdvanceSimClock(t, 90*time.Minute)
	require.NoError(t, commandstest.Activate(f.ctx, f.h, id))
	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: id})
	require.NoError(t, err)
	f.catchUp(t)

	var alloc string
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT id FROM allocations WHERE reservation_id = $1", id).Scan(&alloc))
	require.NotEqual(t, id, alloc)

	// Every event of the placed reservation names its allocation and what
	// it reserved.
	rows, err := f.d.Pool.Query(f.ctx, "SELECT type, data FROM outbox WHERE subject = $1 ORDER BY txid, seq",
		core.ReservationSubject(id))
	require.NoError(t, err)
	defer rows.Close()
	var types []string
	for rows.Next() {
		var typ string
		var data []byte
		require.NoError(t, rows.Scan(&typ, &data))
		var d core.ReservationEventData
		require.NoError(t, json.Unmarshal(data, &d))
		types = append(types, typ)
		require.Equal(t, alloc, d.AllocationID, typ)
		require.Equal(t, [3]int64{4, 2048, 20}, [3]int64{d.VCPU, d.MemoryMB, d.DiskGB}, typ)
		require.Equal(t, 1, d.Gpus, typ)
		require.Equal(t, core.AtomGPU, d.GPUKind, typ)
		require.Equal(t, "a100", d.GPUModel, typ)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{core.EventReservationBooked, core.EventReservationActivated, core.EventReservationReleased}, types)

	want := []string{"cmp:" + alloc + ":2030-01-01T00:00:00Z", "cmp:" + alloc + ":2030-01-01T01:00:00Z"}
	check := func(when string) {
		t.Helper()
		all, err := f.d.Q.RmUsageWindowListAll(f.ctx)
		require.NoError(t, err)
		var keys []string
		for _, w := range all {
			if w.ReservationID != id {
				continue
			}
			keys = append(keys, w.Key)
			require.Equal(t, alloc, w.AllocationID, when)
			require.True(t, w.Final, "%s: released, so its windows are closed", when)
			require.Equal(t, [3]int64{4, 2048, 20}, [3]int64{w.Vcpu, w.MemoryMb, w.DiskGb}, when)
			require.Equal(t, [2]string{"gpu", "a100"}, [2]string{w.GpuKind, w.GpuModel}, when)
		}
		require.Equal(t, want, keys, when)
	}
	check("live")

	// The same log as written before the events carried the allocation and
	// the GPU request: a rebuild reads them from the write model.
	_, err = f.d.Pool.Exec(f.ctx, `UPDATE outbox SET data = data - 'allocationId' - 'gpus' - 'gpuKind' - 'gpuModel'
		- 'migProfile' - 'slotKind' - 'vcpu' - 'memoryMb' - 'diskGb' WHERE subject = $1`, core.ReservationSubject(id))
	require.NoError(t, err)
	_, err = projections.Rebuild(f.ctx, f.d.Pool, projections.NameUsageWindows)
	require.NoError(t, err)
	check("rebuilt from old events")
}

// A site reservation names no pool, but its usage windows carry the pool of
// the node it was placed on, taken from its reservation.booked event
// (placedPoolId), so a rebuild from the log alone gives the same rows.
func TestUsageWindowOfASiteReservationNamesItsNodesPool(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, SiteID: "fra1", Start: at(0), End: at(1)})
	id := res.Reservation.ID
	require.Equal(t, core.ReservationBooked, res.Reservation.State)

	var data []byte
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT data FROM outbox WHERE subject = $1 AND type = $2",
		core.ReservationSubject(id), core.EventReservationBooked).Scan(&data))
	var d core.ReservationEventData
	require.NoError(t, json.Unmarshal(data, &d))
	require.Equal(t, "", d.PoolID, "a site reservation asks for no pool")
	require.Equal(t, "fra1-gpu", d.PlacedPoolID)

	check := func(when string) {
		t.Helper()
		all, err := f.d.Q.RmUsageWindowListAll(f.ctx)
		require.NoError(t, err)
		n := 0
		for _, w := range all {
			if w.ReservationID == id {
				n++
				require.Equal(t, "fra1-gpu", w.PoolID, when)
			}
		}
		require.Equal(t, 1, n, when)
	}
	f.catchUp(t)
	check("live")
	_, err := projections.Rebuild(f.ctx, f.d.Pool, projections.NameUsageWindows)
	require.NoError(t, err)
	check("rebuilt")
}
