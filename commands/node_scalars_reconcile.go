package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// A node's vCPU, memory and disk are registered at its first join, from
// its daemon's flags. An operator who corrects those flags later (their
// defaults are rarely right) restarts the daemon with them: its inventory
// then carries them, and the reconcile adopts each one that every live and
// future booking on the node still fits. The database decides that fit
// (NodeResourceSetAllocatable's guard, with node_resources_within_capacity
// as the backstop), not Go; one that does not fit, or is out of range,
// keeps the record and raises the node's ScalarsMismatch condition, so
// that the operator sees the placer still books against the old value.

// ReportedScalars are the scalars a daemon's operator configured, each
// nil when its flag was not given.
type ReportedScalars struct {
	VCPU, MemoryMB, DiskGB *int64
}

// MaxNodeScalar bounds a reported scalar: no machine has more (2^40 MB is
// a PiB of memory), and the node's capacity, allocatable times its pool's
// ratio, must stay far within a bigint when a pool sums its nodes.
const MaxNodeScalar = 1 << 40

// ScalarsMismatchMaxBytes bounds the ScalarsMismatch condition's message.
const ScalarsMismatchMaxBytes = 1024

// scalarsReconcile is what reconcileScalars did: the resources whose
// allocatable changed ("vcpu 8 → 4"), why the others reported were not
// adopted (the condition's message, "" for none) and its reason, and the
// node's scalars after it.
type scalarsReconcile struct {
	adopted []string
	refused []string
	reason  string
	after   core.NodeScalars
}

// reconcileScalars compares the daemon's configured scalars with the
// node's counters, which it locks (after the node row and its GPUs, in the
// lock order), and sets each that differs and fits: the counter with a
// guarded update, the pool's rollup by the change of capacity.
func reconcileScalars(ctx context.Context, q *db.Queries, nodeID, poolID string, rep ReportedScalars) (scalarsReconcile, error) {
	var out scalarsReconcile
	rows, err := q.NodeResourceListForUpdate(ctx, nodeID)
	if err != nil {
		return out, pg.Translate(err, "scalars of node "+nodeID)
	}
	reported := map[string]*int64{core.ResourceVCPU: rep.VCPU, core.ResourceMemory: rep.MemoryMB, core.ResourceDisk: rep.DiskGB}
	current := map[string]int64{}
	outOfRange := false
	for _, r := range rows { // resource order: the lock order
		current[r.Resource] = r.Allocatable
		want := reported[r.Resource]
		if want == nil || *want == r.Allocatable {
			continue
		}
		if *want < 0 || *want > MaxNodeScalar {
			out.refused = append(out.refused, fmt.Sprintf("%s %d configured is out of range (0 to %d); %d kept",
				r.Resource, *want, int64(MaxNodeScalar), r.Allocatable))
			outOfRange = true
			continue
		}
		capacity, err := q.NodeResourceSetAllocatable(ctx, db.NodeResourceSetAllocatableParams{
			Allocatable: *want, NodeID: nodeID, Resource: r.Resource})
		if errors.Is(err, pgx.ErrNoRows) {
			out.refused = append(out.refused, fmt.Sprintf("%s %d configured: bookings hold %d, more than it gives "+
				"at ratio %g; %d kept", r.Resource, *want, r.Allocated, r.Ratio, r.Allocatable))
			continue
		}
		if err != nil {
			return out, pg.Translate(err, "node resource "+r.Resource)
		}
		if delta := capacity - r.Capacity; delta != 0 {
			n, err := q.PoolCapacityRollupMoveCapacity(ctx, db.PoolCapacityRollupMoveCapacityParams{
				Delta: delta, PoolID: poolID, Resource: r.Resource})
			if err != nil {
				return out, pg.Translate(err, "pool capacity")
			}
			if n == 0 {
				return out, fmt.Errorf("pool %s capacity rollup for %s: %w", poolID, r.Resource, errRollupDrift)
			}
		}
		out.adopted = append(out.adopted, fmt.Sprintf("%s %d → %d", r.Resource, r.Allocatable, *want))
		current[r.Resource] = *want
	}
	out.after = core.NodeScalars{VCPU: current[core.ResourceVCPU], MemoryMB: current[core.ResourceMemory],
		DiskGB: current[core.ResourceDisk]}
	out.reason = "BookingsDoNotFit"
	if outOfRange {
		out.reason = "OutOfRange"
	}
	return out, nil
}

// message is the ScalarsMismatch condition's message, "" when every
// reported scalar is the record's.
func (s scalarsReconcile) message() string {
	return core.Clip(strings.Join(s.refused, "; "), ScalarsMismatchMaxBytes)
}
