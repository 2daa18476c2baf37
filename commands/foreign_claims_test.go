package commands_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// A node speaks only for itself. Node n2's daemon claims, in its
// inventory, the allocation assigned to n1: the unassign that follows is
// n2's alone (no allocation, no tenant), and when n2 reports it done,
// n1's allocation, reservation, instance and jobs are as they were. An
// unassign of the old shape (naming n1's allocation, queued on n2) stops
// nothing on n1 either.
func TestForeignInventoryClaimLeavesTheOtherNodeAlone(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	f.node(t, "n2", exclusive)
	d1 := f.connect(t, "n1", "j1", 0)
	_, err := f.h.CordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n2"})
	require.NoError(t, err)
	rsv := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	require.Equal(t, "n1", rsv.NodeID)
	alloc := f.allocationOf(t, rsv.ID)
	f.activate(t, rsv)
	d1.dispatch()
	d1.report(d1.sent[0].ID, "succeeded", "", 0) // the assign
	inst, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID})
	require.NoError(t, err)
	d1.dispatch()
	start := d1.sent[len(d1.sent)-1]
	require.Equal(t, core.NodeCommandInstanceStart, start.Kind)
	d1.report(start.ID, "succeeded", "", 0)
	running := get(t, f, inst.Instance.ID)
	require.Equal(t, core.ProvisionRunning, running.State)
	n1Jobs, n1Generation := f.assignmentJobs(t, "n1"), f.generation(t, "n1")

	d2 := f.connect(t, "n2", "j2", 0)
	res, err := f.h.NodeSessions().ReconcileNodeAssignments(f.ctx, "n2", d2.epoch,
		[]commands.ReportedAssignment{{AllocationID: alloc, End: rsv.End}})
	require.NoError(t, err)
	require.Equal(t, []string{alloc}, res.Foreign)
	require.Equal(t, []string{alloc}, res.Unassigned, "n2 is told to drop what it claims")
	n2Jobs := f.assignmentJobs(t, "n2")
	require.Len(t, n2Jobs, 1)
	require.Equal(t, core.NodeCommandUnassign, n2Jobs[0].Kind)
	require.Nil(t, n2Jobs[0].AllocationID, "the job names no allocation of n1's")
	require.Empty(t, n2Jobs[0].Tenant, "and takes none of the tenant's keys")
	d2.dispatch()
	require.Len(t, d2.sent, 1)
	d2.report(d2.sent[0].ID, "succeeded", "", 0)

	// An unassign of the shape the reconcile used to queue: n1's
	// allocation, on n2.
	_, err = f.d.Pool.Exec(f.ctx, `INSERT INTO node_commands (id, tenant_id, identity, node_id, allocation_id,
		idempotency_key, kind, retry_safe, payload, state, generation)
		VALUES ($1, 'acme', 'system', 'n2', $2, 'old-shape', 'unassign', true, jsonb_build_object('allocationId', $2::text), 'queued', 1)`,
		"cmd_"+uuid.NewString(), alloc)
	require.NoError(t, err)
	d2.dispatch()
	require.Len(t, d2.sent, 2)
	d2.report(d2.sent[1].ID, "succeeded", "", 0)

	after := get(t, f, inst.Instance.ID)
	require.Equal(t, core.ProvisionRunning, after.State, "n1's instance runs on")
	require.Equal(t, running.Version, after.Version)
	require.Equal(t, n1Jobs, f.assignmentJobs(t, "n1"), "no job of n1's changed")
	require.Equal(t, n1Generation, f.generation(t, "n1"))
	var released bool
	var state string
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT a.released_at IS NOT NULL, r.state FROM allocations a
		JOIN reservations r ON r.id = a.reservation_id WHERE a.id = $1`, alloc).Scan(&released, &state))
	require.False(t, released)
	require.Equal(t, string(core.ReservationActive), state)
	require.Zero(t, f.countEvents(t, core.EventInstanceStopping)+f.countEvents(t, core.EventInstanceStopped))
	f.requireInvariants(t)
}
