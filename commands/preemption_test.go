package commands_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/wire"
)

// preemptionFixture is a pool with one node of four GPUs and the classes
// batch (-100, preemptible, 60 s grace) and prod (1000), acme allowed both
// and globex allowed batch.
func preemptionFixture(t *testing.T) (*fixture, []string) {
	t.Helper()
	f := setup(t)
	f.classes(t)
	_, err := f.h.SetTenantPriorityClasses(f.ctx, operator, commands.SetTenantPriorityClasses{Tenant: "globex",
		Classes: []string{"batch"}})
	require.NoError(t, err)
	return f, f.node(t, "n1", exclusive, exclusive, exclusive, exclusive)
}

func (f *fixture) reservationState(t *testing.T, id string) core.State {
	t.Helper()
	r, err := f.h.GetReservation(f.ctx, operator, id)
	require.NoError(t, err)
	return r.State
}

func (f *fixture) quotaUsed(t *testing.T, tenant, resource string) int64 {
	t.Helper()
	q, err := f.d.Q.QuotaUsageGet(f.ctx, dbQuota(tenant, resource))
	require.NoError(t, err)
	return q.Used
}

// A prod create on a full node displaces exactly the minimal victims: of a
// one-GPU and a two-GPU batch reservation and a standard one (not
// preemptible), a two-GPU request takes the two-GPU one alone. The victim
// ends preempted in the same transaction: its quota refunded, its devices
// the preemptor's, one reservation.preempted naming the preemptor, a
// Preempted condition, a reservation_preemptions row, and its unassign
// (with the class's grace) queued before the preemptor's assign, which
// dispatch holds back until the daemon concluded the unassign.
func TestPreemptionDisplacesTheMinimalVictims(t *testing.T) {
	t.Parallel()
	f, _ := preemptionFixture(t)
	start, end := window(0, 4)
	one := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, Start: start, End: end, PriorityClass: "batch"})
	two := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 2, Start: start, End: end, PriorityClass: "batch"})
	std := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end})
	for _, r := range []commands.ReservationResult{one, two, std} {
		require.Equal(t, core.ReservationBooked, r.Reservation.State)
	}
	require.EqualValues(t, 3, f.quotaUsed(t, "globex", "gpu"))
	d := f.connect(t, "n1", "j1", 0)
	for _, s := range d.dispatch().ToSend { // the daemon holds the three
		d.report(s.ID, "succeeded", "", f.generation(t, "n1"))
	}

	pre := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, Start: start, End: end, PriorityClass: "prod"})
	require.Equal(t, core.ReservationBooked, pre.Reservation.State)
	require.ElementsMatch(t, two.Reservation.DeviceIDs, pre.Reservation.DeviceIDs, "the victim's devices")
	require.Equal(t, core.ReservationPreempted, f.reservationState(t, two.Reservation.ID))
	require.Equal(t, core.ReservationBooked, f.reservationState(t, one.Reservation.ID), "not needed: not displaced")
	require.Equal(t, core.ReservationBooked, f.reservationState(t, std.Reservation.ID))
	require.EqualValues(t, 1, f.quotaUsed(t, "globex", "gpu"), "the victim's charge refunded")
	require.EqualValues(t, 3, f.quotaUsed(t, "acme", "gpu"))

	victim, err := f.h.GetReservation(f.ctx, tenantB, two.Reservation.ID)
	require.NoError(t, err)
	require.Len(t, victim.Conditions, 1)
	require.Equal(t, core.ConditionPreempted, victim.Conditions[0].Type)
	require.Contains(t, victim.Conditions[0].Message, pre.Reservation.ID)
	events, tenants := eventsOf[core.ReservationEventData](t, f, core.EventReservationPreempted, core.ReservationSubject(two.Reservation.ID))
	require.Len(t, events, 1)
	require.Equal(t, []string{"globex"}, tenants, "the victim's tenant's event")
	require.Equal(t, pre.Reservation.ID, events[0].PreemptedBy)
	require.Equal(t, core.ReservationPreempted, events[0].State)

	var preemptor string
	var victimPriority, preemptorPriority, grace int32
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT preemptor_id, victim_priority, preemptor_priority, grace_seconds
		FROM reservation_preemptions WHERE victim_id = $1`, two.Reservation.ID).Scan(&preemptor, &victimPriority, &preemptorPriority, &grace))
	require.Equal(t, pre.Reservation.ID, preemptor)
	require.EqualValues(t, -100, victimPriority)
	require.EqualValues(t, 1000, preemptorPriority)
	require.EqualValues(t, 60, grace)

	// The unassign first, with the grace; the assign after it.
	jobs := f.assignmentJobs(t, "n1")
	require.Len(t, jobs, 5)
	unassign, assign := jobs[3], jobs[4]
	require.Equal(t, core.NodeCommandUnassign, unassign.Kind)
	require.Equal(t, f.allocationOf(t, two.Reservation.ID), *unassign.AllocationID)
	var up wire.UnassignPayload
	require.NoError(t, json.Unmarshal(unassign.Payload, &up))
	require.NotNil(t, up.GraceSeconds)
	require.EqualValues(t, 60, *up.GraceSeconds)
	require.Equal(t, core.NodeCommandAssign, assign.Kind)
	require.Equal(t, f.allocationOf(t, pre.Reservation.ID), *assign.AllocationID)

	sent := d.dispatch().ToSend
	require.Len(t, sent, 1, "the preemptor's assign waits for the victim's unassign")
	require.Equal(t, unassign.ID, sent[0].ID)
	d.report(unassign.ID, "succeeded", "", *unassign.Generation)
	sent = d.dispatch().ToSend
	require.Len(t, sent, 1)
	require.Equal(t, assign.ID, sent[0].ID)
	f.requireInvariants(t)
}

// Never an equal or higher priority, never a class that is not
// preemptible: a batch create on a node full of batch goes pending, and so
// does a prod create when only the standard reservation and prod ones are
// left to displace.
func TestPreemptionNeverEqualHigherOrNotPreemptible(t *testing.T) {
	t.Parallel()
	f, _ := preemptionFixture(t)
	start, end := window(0, 4)
	var batch []commands.ReservationResult
	for range 4 {
		batch = append(batch, f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, Start: start, End: end, PriorityClass: "batch"}))
	}
	same := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, Start: start, End: end, PriorityClass: "batch"})
	require.Equal(t, core.ReservationPending, same.Reservation.State, "equal priority does not preempt")

	// prod takes three of them, one at a time; a standard reservation
	// takes the last.
	for range 3 {
		p := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end, PriorityClass: "prod"})
		require.Equal(t, core.ReservationBooked, p.Reservation.State)
	}
	std := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end})
	require.Equal(t, core.ReservationBooked, std.Reservation.State, "standard (0) preempts batch (-100)")
	preempted := 0
	for _, b := range batch {
		if f.reservationState(t, b.Reservation.ID) == core.ReservationPreempted {
			preempted++
		}
	}
	require.Equal(t, 4, preempted)

	// Nothing preemptible is left: prod goes pending.
	p := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end, PriorityClass: "prod"})
	require.Equal(t, core.ReservationPending, p.Reservation.State)
	require.Equal(t, core.ReservationPending, f.reservationState(t, same.Reservation.ID))
	f.requireInvariants(t)
}

// The pending retry preempts too: a prod reservation that went pending
// while the node was full of standard reservations takes the GPU a batch
// reservation booked after one of them was released.
func TestPendingRetryPreempts(t *testing.T) {
	t.Parallel()
	f, _ := preemptionFixture(t)
	start, end := window(0, 4)
	var std []commands.ReservationResult
	for range 4 {
		std = append(std, f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end}))
	}
	p := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end, PriorityClass: "prod"})
	require.Equal(t, core.ReservationPending, p.Reservation.State)

	_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: std[0].Reservation.ID})
	require.NoError(t, err)
	b := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, Start: start, End: end, PriorityClass: "batch"})
	require.Equal(t, core.ReservationBooked, b.Reservation.State)

	require.NoError(t, f.h.RetryPending(f.ctx, p.Reservation.ID))
	require.Equal(t, core.ReservationBooked, f.reservationState(t, p.Reservation.ID))
	require.Equal(t, core.ReservationPreempted, f.reservationState(t, b.Reservation.ID))
	events, _ := eventsOf[core.ReservationEventData](t, f, core.EventReservationPreempted, core.ReservationSubject(b.Reservation.ID))
	require.Len(t, events, 1)
	require.Equal(t, p.Reservation.ID, events[0].PreemptedBy)
	f.requireInvariants(t)
}

// A reservation that names a site preempts on any node of the site's
// pools, as one that names a pool does on the pool's.
func TestPreemptionInASite(t *testing.T) {
	t.Parallel()
	f, _ := preemptionFixture(t)
	start, end := window(0, 4)
	var batch []commands.ReservationResult
	for range 4 {
		batch = append(batch, f.reserve(t, tenantB, commands.CreateReservation{GPUs: 1, Start: start, End: end, PriorityClass: "batch"}))
	}
	pre := f.reserve(t, tenantA, commands.CreateReservation{SiteID: "fra1", GPUs: 1, Start: start, End: end, PriorityClass: "prod"})
	require.Equal(t, core.ReservationBooked, pre.Reservation.State)
	preempted := 0
	for _, b := range batch {
		if f.reservationState(t, b.Reservation.ID) == core.ReservationPreempted {
			preempted++
			require.Equal(t, b.Reservation.DeviceIDs, pre.Reservation.DeviceIDs)
		}
	}
	require.Equal(t, 1, preempted, "one victim is enough")
	f.requireInvariants(t)
}

// A preemptor released during its victim's grace never starts the
// workload it asked for. Its instance-start waits with its assign behind
// the victim's unassign; sent once that concluded, it would start the
// workload on GPUs the tenant had given back (the demo did, 12 s after the
// release, with the instance already stopping). Dispatch cancels a queued
// start whose instance is no longer requested instead; the unassign still
// goes, and the instance ends stopped.
func TestReleasedPreemptorsHeldStartIsNeverSent(t *testing.T) {
	t.Parallel()
	f, _ := preemptionFixture(t)
	start, end := window(0, 4)
	victim := f.reserve(t, tenantB, commands.CreateReservation{GPUs: 4, Start: start, End: end, PriorityClass: "batch"})
	d := f.connect(t, "n1", "j1", 0)
	for _, s := range d.dispatch().ToSend { // the daemon holds the victim
		d.report(s.ID, "succeeded", "", f.generation(t, "n1"))
	}

	pre := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 4, Start: start, End: end, PriorityClass: "prod"})
	require.Equal(t, core.ReservationPreempted, f.reservationState(t, victim.Reservation.ID))
	f.activate(t, pre.Reservation)
	i, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: pre.Reservation.ID})
	require.NoError(t, err)
	rep := d.dispatch()
	require.Len(t, rep.ToSend, 1, "only the victim's unassign: the preemptor's assign and start wait")
	unassign := rep.ToSend[0]
	require.Equal(t, core.NodeCommandUnassign, unassign.Kind)

	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: pre.Reservation.ID})
	require.NoError(t, err)
	require.Equal(t, core.ProvisionStopping, get(t, f, i.Instance.ID).State)

	d.report(unassign.ID, "succeeded", "", f.generation(t, "n1")) // the victim's grace is over
	rep = d.dispatch()
	for _, s := range rep.ToSend {
		require.NotEqual(t, core.NodeCommandInstanceStart, s.Kind, "the released reservation's workload must not start")
	}
	var state string
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT state FROM node_commands WHERE instance_id = $1
		AND kind = 'instance-start'`, i.Instance.ID).Scan(&state))
	require.Equal(t, string(core.CommandCancelled), state)
	require.Equal(t, 1, f.countEvents(t, core.EventNodeCommandCancelled))

	for _, s := range rep.ToSend { // the assign and the unassign conclude
		d.report(s.ID, "succeeded", "", f.generation(t, "n1"))
	}
	require.Equal(t, core.ProvisionStopped, get(t, f, i.Instance.ID).State)
	f.requireInvariants(t)
}
