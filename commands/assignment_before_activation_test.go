package commands_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// assignsOf are the node's assign jobs of the allocation, oldest first.
func (f *fixture) assignsOf(t *testing.T, node, allocationID string) []job {
	t.Helper()
	var out []job
	for _, j := range f.assignmentJobs(t, node) {
		if j.Kind == core.NodeCommandAssign && j.AllocationID != nil && *j.AllocationID == allocationID {
			out = append(out, j)
		}
	}
	return out
}

// keysOf are the jobs' idempotency keys.
func keysOf(jobs []job) []string {
	keys := []string{}
	for _, j := range jobs {
		keys = append(keys, j.Key)
	}
	return keys
}

// Between an advance booking's start and its activation (a worker that
// activates late), neither the node's resync nor a reconnecting daemon's
// reconcile assigns the allocation: its activation does, once. Both used
// to count the allocation as due as soon as its window had begun and
// queued an assign of their own (assign:<id>:g<generation>,
// assign:<id>:r<epoch>), which the activation then repeated under
// assign:<id>: two jobs, two node_assignment.queued events and two
// generations for one allocation.
func TestResyncAndReconcileBeforeActivationLeaveTheAssignToIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		early func(f *fixture) []string // what it queued for the node, by allocation
	}{
		{"resync", func(f *fixture) []string {
			res, _, err := f.h.ResyncNode(f.ctx, "n1")
			require.NoError(t, err)
			return res.Repushed
		}},
		{"reconcile", func(f *fixture) []string {
			back := f.connectUnreported(t, "n1", "j1", 0) // it reconnects, holding nothing
			res, err := f.h.NodeSessions().ReconcileNodeAssignments(f.ctx, "n1", back.epoch, nil)
			require.NoError(t, err)
			return res.Repushed
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.node(t, "n1", exclusive, exclusive)
			f.connect(t, "n1", "j1", 0)
			start, end := window(1, 3)
			r := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end}).Reservation
			require.Equal(t, core.ReservationBooked, r.State)
			alloc := f.allocationOf(t, r.ID)

			f.d.AdvanceSimClock(t, start.Add(time.Minute).Sub(f.d.Now(t))) // begun, not activated yet
			repushed := tc.early(f)
			generation := f.generation(t, "n1")
			f.activate(t, r)
			require.Equal(t, []string{"assign:" + alloc}, keysOf(f.assignsOf(t, "n1", alloc)),
				"one assign, the activation's")
			require.Empty(t, repushed, "left to the activation")
			require.Zero(t, generation, "the node's desired spec unchanged before the activation")
			require.Equal(t, 1, f.countEvents(t, core.EventNodeAssignmentQueued))
			require.Equal(t, int64(1), f.generation(t, "n1"))

			res, _, err := f.h.ResyncNode(f.ctx, "n1")
			require.NoError(t, err)
			require.Empty(t, res.Repushed, "its assign is on its way")
			require.Len(t, f.assignsOf(t, "n1", alloc), 1)
			f.requireInvariants(t)
		})
	}
}

// The resync and the reconcile still repair an activated allocation whose
// node missed its assign: one that failed for a passing reason is queued
// again by the resync, and one the daemon lost (it came back with another
// journal) by its reconcile.
func TestResyncAndReconcileRepairTheActivationsAssign(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	d := f.connect(t, "n1", "j1", 0)
	start, end := window(1, 3)
	r := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end}).Reservation
	alloc := f.allocationOf(t, r.ID)
	f.activate(t, r)

	d.dispatch()
	require.Len(t, d.sent, 1)
	d.report(d.sent[0].ID, "failed", "journal: input/output error", 0)
	res, _, err := f.h.ResyncNode(f.ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, []string{alloc}, res.Repushed, "the resync re-sends a failed assign")
	jobs := f.assignsOf(t, "n1", alloc)
	require.Len(t, jobs, 2)
	require.Equal(t, fmt.Sprintf("assign:%s:g%d", alloc, *jobs[1].Generation), jobs[1].Key)
	d.dispatch()
	require.Len(t, d.sent, 2)
	d.report(d.sent[1].ID, "succeeded", "", 0)

	back := f.connect(t, "n1", "j2", 0) // a new journal: it holds nothing
	jobs = f.assignsOf(t, "n1", alloc)
	require.Len(t, jobs, 3, "the reconcile re-sends what the daemon lost")
	require.Equal(t, fmt.Sprintf("assign:%s:r%d", alloc, back.epoch), jobs[2].Key)
	f.requireInvariants(t)
}
