package commands_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// scalarsOf reads a node's counters by resource: allocatable, capacity
// (floor(allocatable × ratio)) and allocated; and its pool rollup's
// capacity by resource.
func (f *fixture) scalarsOf(t *testing.T, node string) (alloc, capacity, allocated, pool map[string]int64) {
	t.Helper()
	alloc, capacity, allocated, pool = map[string]int64{}, map[string]int64{}, map[string]int64{}, map[string]int64{}
	rows, err := f.d.Pool.Query(f.ctx, `SELECT resource, allocatable, floor(allocatable * ratio)::bigint, allocated
		FROM node_resources WHERE node_id = $1`, node)
	require.NoError(t, err)
	for rows.Next() {
		var r string
		var a, c, used int64
		require.NoError(t, rows.Scan(&r, &a, &c, &used))
		alloc[r], capacity[r], allocated[r] = a, c, used
	}
	require.NoError(t, rows.Err())
	rows, err = f.d.Pool.Query(f.ctx, `SELECT p.resource, p.capacity FROM pool_capacity_rollup p
		JOIN nodes n ON n.pool_id = p.pool_id WHERE n.id = $1`, node)
	require.NoError(t, err)
	for rows.Next() {
		var r string
		var c int64
		require.NoError(t, rows.Scan(&r, &c))
		pool[r] = c
	}
	require.NoError(t, rows.Err())
	return alloc, capacity, allocated, pool
}

// lastInventory is the node's latest node.inventory_reconciled.
func (f *fixture) lastInventory(t *testing.T, node string) core.NodeInventoryReconciledEventData {
	t.Helper()
	var raw []byte
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT data FROM outbox WHERE type = $1 AND subject = $2
		ORDER BY txid DESC, seq DESC LIMIT 1`, core.EventNodeInventoryReconciled, core.NodeSubject(node)).Scan(&raw))
	var ev core.NodeInventoryReconciledEventData
	require.NoError(t, json.Unmarshal(raw, &ev))
	return ev
}

// lastInventoryScalars is the scalars of the node's latest
// node.inventory_reconciled (nil when it carries none).
func (f *fixture) lastInventoryScalars(t *testing.T, node string) *core.NodeScalars {
	t.Helper()
	return f.lastInventory(t, node).Scalars
}

// lastInventoryPending is the pending shrinks of the node's latest
// node.inventory_reconciled (nil when it says nothing of them).
func (f *fixture) lastInventoryPending(t *testing.T, node string) *core.NodePendingScalars {
	t.Helper()
	return f.lastInventory(t, node).PendingScalars
}

func ptr(v int64) *int64 { return &v }

// An operator who restarts a joined node's daemon with other --vcpu and
// --memory-mb (the defaults are rarely right) sees the node take them: the
// counters, the pool's capacity and the event follow; the same report again
// writes nothing, and a daemon that reports none (no flag given) changes
// nothing.
func TestInventoryAdoptsConfiguredScalars(t *testing.T) {
	t.Parallel()
	f := setup(t) // the pool's cpu ratio is 2
	gpus := f.node(t, "n1", exclusive)
	d := f.connect(t, "n1", "j1", 0)
	_, _, _, poolBefore := f.scalarsOf(t, "n1")
	report := func(sc *commands.ReportedScalars) commands.InventoryResult {
		t.Helper()
		res, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, commands.NodeInventory{
			GPUs: []commands.ReportedGPU{{UUID: gpus[0], Model: "a100", MemoryMB: 81920}}, Scalars: sc})
		require.NoError(t, err)
		return res
	}

	require.False(t, report(nil).Changed, "no flag given: nothing to adopt")
	res := report(&commands.ReportedScalars{VCPU: ptr(4), MemoryMB: ptr(4096)})
	require.True(t, res.Changed)
	require.Equal(t, []string{"memory 524288 → 4096", "vcpu 64 → 4"}, res.ScalarsAdopted)
	require.Empty(t, res.ScalarsRefused)
	alloc, capacity, _, pool := f.scalarsOf(t, "n1")
	require.Equal(t, map[string]int64{"vcpu": 4, "memory": 4096, "disk": 2000}, alloc)
	require.Equal(t, int64(8), capacity["vcpu"], "4 vCPUs at ratio 2")
	require.Equal(t, poolBefore["vcpu"]-128+8, pool["vcpu"], "the pool's capacity moves with the node's")
	require.Equal(t, poolBefore["memory"]-524288+4096, pool["memory"])
	require.Equal(t, poolBefore["disk"], pool["disk"])
	require.Equal(t, &core.NodeScalars{VCPU: 4, MemoryMB: 4096, DiskGB: 2000}, f.lastInventoryScalars(t, "n1"))
	require.NotContains(t, f.nodeConditions(t, "n1"), core.ConditionScalarsMismatch)
	f.requireInvariants(t)

	// The same flags at the next connect: nothing written.
	events := f.countEvents(t, core.EventNodeInventoryReconciled)
	require.False(t, report(&commands.ReportedScalars{VCPU: ptr(4), MemoryMB: ptr(4096)}).Changed)
	require.False(t, report(nil).Changed)
	require.Equal(t, events, f.countEvents(t, core.EventNodeInventoryReconciled))

	// The placer books against the new values: 9 vCPUs do not fit 4 at
	// ratio 2.
	start, end := window(0, 1)
	_, err := f.h.CreateReservation(f.ctx, tenantA, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1, VCPU: 9,
		Start: start, End: end})
	require.NoError(t, err)
	_, _, allocated, _ := f.scalarsOf(t, "n1")
	require.Zero(t, allocated["vcpu"], "not booked on n1")
}

// A configured scalar that the node's live and future bookings would not
// fit is not adopted: the record stays, the ScalarsMismatch condition says
// why, and the other scalars of the report are adopted. Once the bookings
// end, the same report is adopted and clears the condition. A value out of
// range is refused the same way.
func TestInventoryRefusesScalarsBookingsDoNotFit(t *testing.T) {
	t.Parallel()
	f := setup(t) // the pool's cpu ratio is 2
	gpus := f.node(t, "n1", exclusive)
	d := f.connect(t, "n1", "j1", 0)
	start, end := window(5, 7) // a future booking holds its scalars too
	held := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: 10, MemoryMB: 1024, Start: start, End: end})
	report := func(sc *commands.ReportedScalars) commands.InventoryResult {
		t.Helper()
		res, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, commands.NodeInventory{
			GPUs: []commands.ReportedGPU{{UUID: gpus[0], Model: "a100", MemoryMB: 81920}}, Scalars: sc})
		require.NoError(t, err)
		return res
	}

	res := report(&commands.ReportedScalars{VCPU: ptr(4), DiskGB: ptr(1000)})
	require.True(t, res.Changed)
	require.Equal(t, []string{"disk 2000 → 1000"}, res.ScalarsAdopted)
	require.Len(t, res.ScalarsRefused, 1)
	alloc, _, allocated, _ := f.scalarsOf(t, "n1")
	require.Equal(t, int64(64), alloc["vcpu"], "the record stays")
	require.Equal(t, int64(10), allocated["vcpu"])
	require.Equal(t, int64(1000), alloc["disk"])
	c, ok := f.nodeConditions(t, "n1")[core.ConditionScalarsMismatch]
	require.True(t, ok, "ScalarsMismatch raised")
	require.Equal(t, "BookingsDoNotFit", c.Reason)
	require.Equal(t, "vcpu 4 configured: bookings hold 10, more than it gives at ratio 2; 64 kept until they fit, "+
		"new bookings held to 4", c.Message)
	require.Equal(t, &core.NodeScalars{VCPU: 64, MemoryMB: 512 * 1024, DiskGB: 1000}, f.lastInventoryScalars(t, "n1"))
	f.requireInvariants(t)

	// The same report again: nothing new.
	require.False(t, report(&commands.ReportedScalars{VCPU: ptr(4), DiskGB: ptr(1000)}).Changed)

	// 5 vCPUs give 10 at ratio 2: exactly what is booked, adopted.
	res = report(&commands.ReportedScalars{VCPU: ptr(5), DiskGB: ptr(1000)})
	require.Equal(t, []string{"vcpu 64 → 5"}, res.ScalarsAdopted)
	require.NotContains(t, f.nodeConditions(t, "n1"), core.ConditionScalarsMismatch)
	f.requireInvariants(t)

	// Out of range: refused, whatever is booked.
	res = report(&commands.ReportedScalars{VCPU: ptr(-1)})
	require.Empty(t, res.ScalarsAdopted)
	c = f.nodeConditions(t, "n1")[core.ConditionScalarsMismatch]
	require.Equal(t, "OutOfRange", c.Reason)
	require.Contains(t, c.Message, "vcpu -1 configured is out of range")

	// 4 again: refused while the booking holds 10; adopted once it ends.
	report(&commands.ReportedScalars{VCPU: ptr(4)})
	require.Equal(t, "BookingsDoNotFit", f.nodeConditions(t, "n1")[core.ConditionScalarsMismatch].Reason)
	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: held.Reservation.ID})
	require.NoError(t, err)
	res = report(&commands.ReportedScalars{VCPU: ptr(4)})
	require.Equal(t, []string{"vcpu 5 → 4"}, res.ScalarsAdopted)
	require.NotContains(t, f.nodeConditions(t, "n1"), core.ConditionScalarsMismatch)
	f.requireInvariants(t)
}
