package commands_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/workqueue"
)

// runNodeResync moves the simulated clock to the node's next resync and
// runs it as a worker does: claimed from the work queue under its shard
// lease.
func (f *fixture) runNodeResync(t *testing.T) {
	t.Helper()
	f.d.AdvanceSimClock(t, commands.DefaultNodeResyncEvery)
	w := workqueue.NewWorker(f.d.Pool, "w", nil, nil)
	w.Handle(commands.KindNodeResync, f.h.Reconcilers().ByKind()[commands.KindNodeResync])
	n, err := w.RunOnce(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the node's resync was due")
}

// pendingVCPU is what node n1 remembers of a refused vCPU shrink (nil: none).
func (f *fixture) pendingVCPU(t *testing.T) *int64 {
	t.Helper()
	var p *int64
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT pending_allocatable FROM node_resources
		WHERE node_id = 'n1' AND resource = 'vcpu'`).Scan(&p))
	return p
}

// placedOnN1 says whether a reservation of vcpu vCPUs (and a GPU) books
// on n1, the pool's only node, and cancels it when it does not (it waits,
// pending).
func (f *fixture) placedOnN1(t *testing.T, vcpu int64) bool {
	t.Helper()
	r := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: vcpu})
	if r.Reservation.State == core.ReservationPending {
		_, err := f.h.CancelReservation(f.ctx, tenantA, commands.CancelReservation{ReservationID: r.Reservation.ID})
		require.NoError(t, err)
		return false
	}
	require.Equal(t, "n1", r.Reservation.NodeID)
	return true
}

// An operator restarts a busy node's daemon with a smaller --vcpu: the
// bookings do not fit it, so it is not adopted, but it is not forgotten.
// The placer books against it at once (else new bookings could keep it
// from ever fitting), and the node's periodic resync adopts it once the
// booking that blocked it has ended, without a second restart: the
// counter, the pool's capacity, the condition and one event, as a report
// would have. A reservation that books between the refusal and the retry
// books if it fits the smaller value and does not keep the shrink out.
func TestPendingShrinkAdoptedOnceBookingsFit(t *testing.T) {
	t.Parallel()
	f := setup(t) // the pool's cpu ratio is 2
	gpus := f.node(t, "n1", exclusive, exclusive)
	d := f.connect(t, "n1", "j1", 0)
	_, _, _, poolBefore := f.scalarsOf(t, "n1")
	held := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: 10})
	require.Equal(t, "n1", held.Reservation.NodeID)
	res, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, commands.NodeInventory{
		GPUs: []commands.ReportedGPU{{UUID: gpus[0], Model: "a100", MemoryMB: 81920},
			{UUID: gpus[1], Model: "a100", MemoryMB: 81920}},
		Scalars: &commands.ReportedScalars{VCPU: ptr(4)}})
	require.NoError(t, err)
	require.Empty(t, res.ScalarsAdopted)
	require.Equal(t, []string{"vcpu 4 configured: bookings hold 10, more than it gives at ratio 2; 64 kept until they fit, " +
		"new bookings held to 4"},
		res.ScalarsRefused)
	require.Equal(t, ptr(4), f.pendingVCPU(t), "the refused shrink is remembered")
	require.Equal(t, &core.NodePendingScalars{VCPU: ptr(4)}, f.lastInventoryPending(t, "n1"),
		"the event says which shrink waits")

	// The booking still holds 10: the resync adopts nothing, writes nothing.
	events := f.countEvents(t, core.EventNodeInventoryReconciled)
	f.runNodeResync(t)
	alloc, _, _, _ := f.scalarsOf(t, "n1")
	require.Equal(t, int64(64), alloc["vcpu"])
	require.Equal(t, events, f.countEvents(t, core.EventNodeInventoryReconciled))

	// Meanwhile the placer books against 4 (8 at ratio 2), not 64: 10 are
	// held already, so not even one more vCPU lands on n1.
	require.False(t, f.placedOnN1(t, 1), "booked past the pending shrink")

	// The booking ends. The release adopts nothing itself.
	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: held.Reservation.ID})
	require.NoError(t, err)
	alloc, _, _, _ = f.scalarsOf(t, "n1")
	require.Equal(t, int64(64), alloc["vcpu"])
	require.Contains(t, f.nodeConditions(t, "n1"), core.ConditionScalarsMismatch)

	// Before the retry, a reservation of 6 books (within 8); one of 3 more
	// would pass 8 and does not.
	require.True(t, f.placedOnN1(t, 6))
	require.False(t, f.placedOnN1(t, 3))

	f.runNodeResync(t)
	alloc, capacity, allocated, pool := f.scalarsOf(t, "n1")
	require.Equal(t, int64(4), alloc["vcpu"], "adopted without a new report")
	require.Equal(t, int64(8), capacity["vcpu"])
	require.Equal(t, int64(6), allocated["vcpu"], "the booking made meanwhile is kept")
	require.Equal(t, poolBefore["vcpu"]-128+8, pool["vcpu"], "the pool's capacity moves with the node's")
	require.Equal(t, poolBefore["memory"], pool["memory"])
	require.Nil(t, f.pendingVCPU(t))
	require.NotContains(t, f.nodeConditions(t, "n1"), core.ConditionScalarsMismatch)
	require.Equal(t, events+1, f.countEvents(t, core.EventNodeInventoryReconciled), "one event")
	require.Equal(t, &core.NodeScalars{VCPU: 4, MemoryMB: 512 * 1024, DiskGB: 2000}, f.lastInventoryScalars(t, "n1"))
	require.Equal(t, &core.NodePendingScalars{}, f.lastInventoryPending(t, "n1"), "the event says none waits any more")
	f.requireInvariants(t)

	// Nothing is pending any more: the next resync writes nothing.
	f.runNodeResync(t)
	require.Equal(t, events+1, f.countEvents(t, core.EventNodeInventoryReconciled))
}

// The daemon's next report replaces the remembered shrink: the old value
// back, or no value stated, ends it (and the placer books against the
// record again); a grow is adopted at once. A value out of range in the
// same report as a pending shrink is kept in the condition when the
// resync adopts the shrink.
func TestLaterReportReplacesPendingShrink(t *testing.T) {
	t.Parallel()
	f := setup(t) // the pool's cpu ratio is 2
	gpus := f.node(t, "n1", exclusive, exclusive)
	d := f.connect(t, "n1", "j1", 0)
	report := func(sc *commands.ReportedScalars) commands.InventoryResult {
		t.Helper()
		res, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, commands.NodeInventory{
			GPUs: []commands.ReportedGPU{{UUID: gpus[0], Model: "a100", MemoryMB: 81920},
				{UUID: gpus[1], Model: "a100", MemoryMB: 81920}}, Scalars: sc})
		require.NoError(t, err)
		return res
	}
	held := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: 10})

	report(&commands.ReportedScalars{VCPU: ptr(4)})
	require.Equal(t, ptr(4), f.pendingVCPU(t))
	report(&commands.ReportedScalars{VCPU: ptr(64)})
	require.Nil(t, f.pendingVCPU(t), "the old value back ends the shrink")
	require.NotContains(t, f.nodeConditions(t, "n1"), core.ConditionScalarsMismatch)

	report(&commands.ReportedScalars{VCPU: ptr(3)})
	require.Equal(t, ptr(3), f.pendingVCPU(t), "a new shrink replaces the remembered one")
	report(nil)
	require.Nil(t, f.pendingVCPU(t), "a report without scalars states none")
	require.NotContains(t, f.nodeConditions(t, "n1"), core.ConditionScalarsMismatch)
	require.True(t, f.placedOnN1(t, 20), "the placer books against the record again")

	report(&commands.ReportedScalars{VCPU: ptr(4), MemoryMB: ptr(-1)})
	c := f.nodeConditions(t, "n1")[core.ConditionScalarsMismatch]
	require.Equal(t, "OutOfRange", c.Reason)
	require.Equal(t, "memory -1 configured is out of range (0 to 1099511627776); 524288 kept; "+
		"vcpu 4 configured: bookings hold 30, more than it gives at ratio 2; 64 kept until they fit, "+
		"new bookings held to 4", c.Message)
	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: held.Reservation.ID})
	require.NoError(t, err)
	f.runNodeResync(t)
	require.Equal(t, ptr(4), f.pendingVCPU(t), "20 still held: more than 8")
	c = f.nodeConditions(t, "n1")[core.ConditionScalarsMismatch]
	require.Contains(t, c.Message, "bookings hold 30", "a retry that adopts nothing writes nothing")

	report(&commands.ReportedScalars{VCPU: ptr(128)})
	alloc, _, _, _ := f.scalarsOf(t, "n1")
	require.Equal(t, int64(128), alloc["vcpu"], "a grow is adopted at once")
	require.Nil(t, f.pendingVCPU(t))
	require.Equal(t, &core.NodePendingScalars{}, f.lastInventoryPending(t, "n1"), "the grow ended the shrink")
	require.NotContains(t, f.nodeConditions(t, "n1"), core.ConditionScalarsMismatch)
	f.requireInvariants(t)
}

// A shrink adopted by the resync leaves a value out of range, stated by
// the same report, in the ScalarsMismatch condition.
func TestPendingShrinkAdoptedKeepsOutOfRange(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", exclusive)
	d := f.connect(t, "n1", "j1", 0)
	held := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: 10})
	_, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, commands.NodeInventory{
		GPUs:    []commands.ReportedGPU{{UUID: gpus[0], Model: "a100", MemoryMB: 81920}},
		Scalars: &commands.ReportedScalars{VCPU: ptr(4), DiskGB: ptr(1 << 41)}})
	require.NoError(t, err)
	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: held.Reservation.ID})
	require.NoError(t, err)
	f.runNodeResync(t)
	alloc, _, _, _ := f.scalarsOf(t, "n1")
	require.Equal(t, int64(4), alloc["vcpu"])
	c := f.nodeConditions(t, "n1")[core.ConditionScalarsMismatch]
	require.Equal(t, "OutOfRange", c.Reason)
	require.Equal(t, "disk 2199023255552 configured is out of range (0 to 1099511627776); 2000 kept", c.Message)
	require.Equal(t, &core.NodeScalars{VCPU: 4, MemoryMB: 512 * 1024, DiskGB: 2000}, f.lastInventoryScalars(t, "n1"))
	f.requireInvariants(t)
}

// The value out of range that a report stated is kept from the record
// (node_resources.reported_out_of_range), not found again in the words of
// the condition: reworded (by a later release, or cut short), the resync
// that adopts a pending shrink still refuses it, and a report that states
// nothing forgets it.
func TestPendingShrinkAdoptedKeepsOutOfRangeFromTheRecord(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", exclusive)
	d := f.connect(t, "n1", "j1", 0)
	held := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: 10})
	inv := commands.NodeInventory{GPUs: []commands.ReportedGPU{{UUID: gpus[0], Model: "a100", MemoryMB: 81920}},
		Scalars: &commands.ReportedScalars{VCPU: ptr(4), MemoryMB: ptr(-7)}}
	_, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, inv)
	require.NoError(t, err)
	var kept *int64
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT reported_out_of_range FROM node_resources
		WHERE node_id = 'n1' AND resource = 'memory'`).Scan(&kept))
	require.Equal(t, ptr(-7), kept)

	// Another wording of the same condition.
	_, err = f.d.Pool.Exec(f.ctx, `UPDATE nodes SET conditions = (SELECT jsonb_agg(CASE WHEN c->>'type' = 'ScalarsMismatch'
		THEN jsonb_set(c, '{message}', '"not adopted, see the record"') ELSE c END) FROM jsonb_array_elements(conditions) c)
		WHERE id = 'n1'`)
	require.NoError(t, err)

	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: held.Reservation.ID})
	require.NoError(t, err)
	f.runNodeResync(t)
	alloc, _, _, _ := f.scalarsOf(t, "n1")
	require.Equal(t, int64(4), alloc["vcpu"], "the shrink is adopted")
	c := f.nodeConditions(t, "n1")[core.ConditionScalarsMismatch]
	require.Equal(t, "OutOfRange", c.Reason, "the value out of range is still refused")
	require.Equal(t, "memory -7 configured is out of range (0 to 1099511627776); 524288 kept", c.Message)
	f.requireInvariants(t)

	// The same report again changes nothing; one without scalars forgets it.
	events := f.countEvents(t, core.EventNodeInventoryReconciled)
	inv.Scalars = &commands.ReportedScalars{VCPU: ptr(4), MemoryMB: ptr(-7)}
	_, err = f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, inv)
	require.NoError(t, err)
	require.Equal(t, events, f.countEvents(t, core.EventNodeInventoryReconciled))
	inv.Scalars = nil
	_, err = f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, inv)
	require.NoError(t, err)
	require.NotContains(t, f.nodeConditions(t, "n1"), core.ConditionScalarsMismatch)
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT reported_out_of_range FROM node_resources
		WHERE node_id = 'n1' AND resource = 'memory'`).Scan(&kept))
	require.Nil(t, kept)
}
