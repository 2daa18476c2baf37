package commands_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
)

// A preemptor whose window starts later takes its victim's devices from
// its start, not now. A running batch reservation holds two GPUs for 8 h
// (the other two are a standard one's); 5 min in, a prod reservation
// books two GPUs for 6 h to 7 h. The victim stays active with its
// devices, its quota and its workloads; its end, its bookings and its
// node's assignment move to 6 h in the same transaction;
// reservation.shortened tells its tenant, naming the preemptor; nothing
// is preempted. At 6 h it expires as any reservation does, and the
// preemptor becomes active on its devices. Before the fix the victim was
// preempted at 5 min and lost the 5 h 55 min nobody needed.
func TestLaterPreemptorCutsTheVictimBack(t *testing.T) {
	t.Parallel()
	f, _ := preemptionFixture(t)
	start, end := window(0, 8)
	victim := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 2, Start: start, End: end, PriorityClass: "batch"}).Reservation
	std := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, Start: start, End: end}).Reservation
	d := f.connect(t, "n1", "j1", 0)
	for _, s := range d.dispatch().ToSend { // the daemon holds both
		d.report(s.ID, "succeeded", "", f.generation(t, "n1"))
	}
	f.activate(t, victim)
	f.activate(t, std)
	f.d.AdvanceSimClock(t, 5*time.Minute)

	preStart, preEnd := window(6, 7)
	pre := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, Start: preStart, End: preEnd, PriorityClass: "prod"}).Reservation
	require.Equal(t, core.ReservationBooked, pre.State)
	require.ElementsMatch(t, victim.DeviceIDs, pre.DeviceIDs, "the victim's devices, from 6 h")

	got, err := f.h.GetReservation(f.ctx, tenantB, victim.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationActive, got.State, "not preempted now")
	require.True(t, got.End.Equal(preStart), "its end moved to the preemptor's start: %s", got.End)
	require.Equal(t, victim.DeviceIDs, got.DeviceIDs)
	require.EqualValues(t, 2, f.quotaUsed(t, "globex", "gpu"), "charged until its end")
	require.Zero(t, f.countEvents(t, core.EventReservationPreempted))
	var records int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM reservation_preemptions").Scan(&records))
	require.Zero(t, records)

	events, tenants := eventsOf[core.ReservationEventData](t, f, core.EventReservationShortened, core.ReservationSubject(victim.ID))
	require.Len(t, events, 1)
	require.Equal(t, []string{"globex"}, tenants, "the victim's tenant's event")
	require.Equal(t, pre.ID, events[0].PreemptedBy)
	require.True(t, events[0].End.Equal(preStart))
	require.Equal(t, core.ReservationActive, events[0].State)
	require.Equal(t, got.Version, events[0].Version)

	// Its bookings end at the preemptor's start; the preemptor's begin there.
	rows, err := f.d.Pool.Query(f.ctx, `SELECT upper(b.during) FROM device_bookings b JOIN allocations a ON a.id = b.allocation_id
		WHERE a.reservation_id = $1`, victim.ID)
	require.NoError(t, err)
	ends := 0
	for rows.Next() {
		var up time.Time
		require.NoError(t, rows.Scan(&up))
		require.True(t, up.Equal(preStart), "booking ends at %s", up)
		ends++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 2, ends)

	// The daemon gets the victim's assignment with the new end; no unassign.
	jobs := f.assignmentJobs(t, "n1")
	last := jobs[len(jobs)-1]
	require.Equal(t, core.NodeCommandAssign, last.Kind)
	require.Equal(t, f.allocationOf(t, victim.ID), *last.AllocationID)
	require.True(t, decodeAssign(t, last.Payload).End.Equal(preStart))
	for _, j := range jobs {
		require.NotEqual(t, core.NodeCommandUnassign, j.Kind)
	}
	var due time.Time
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT not_before FROM work_queue WHERE kind = $1 AND key = $2`,
		commands.KindReservationExpire, victim.ID).Scan(&due))
	require.True(t, due.Equal(preStart), "the expiry is due at the new end, not %s", due)
	f.requireInvariants(t)

	// At 6 h the victim expires, as any reservation does, and the preemptor
	// becomes active on its devices.
	f.d.AdvanceSimClock(t, preStart.Sub(f.d.Now(t)))
	require.NoError(t, commandstest.Expire(f.ctx, f.h, victim.ID))
	require.Equal(t, core.ReservationExpired, f.reservationState(t, victim.ID))
	require.Zero(t, f.quotaUsed(t, "globex", "gpu"))
	f.activate(t, pre)
	require.Equal(t, core.ReservationActive, f.reservationState(t, std.ID))
	f.requireInvariants(t)
}

// A preemptor whose start is within its victim's grace from now (batch's
// 60 s) preempts it now, as before: the grace would take the victim's
// workloads up to that start anyway.
func TestPreemptorStartingWithinTheGracePreemptsNow(t *testing.T) {
	t.Parallel()
	f, _ := preemptionFixture(t)
	start, end := window(0, 8)
	victim := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 4, Start: start, End: end, PriorityClass: "batch"}).Reservation
	f.activate(t, victim)
	soon := f.d.Now(t).Add(time.Minute)
	pre := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 4, Start: soon, End: end, PriorityClass: "prod"}).Reservation
	require.Equal(t, core.ReservationBooked, pre.State)
	require.Equal(t, core.ReservationPreempted, f.reservationState(t, victim.ID))
	require.Zero(t, f.countEvents(t, core.EventReservationShortened))
	f.requireInvariants(t)
}
