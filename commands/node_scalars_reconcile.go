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
// keeps the record and raises the node's ScalarsMismatch condition.
//
// A shrink refused because the bookings hold more is remembered
// (node_resources.pending_allocatable) rather than forgotten: the placer
// books new reservations against it at once, so that they cannot keep it
// from ever fitting, and the node's periodic resync adopts it once the
// bookings that blocked it have ended (retryPendingScalars), without the
// daemon reporting again. The next report replaces what is remembered.

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
// adopted (the condition's message, "" for none) and its reason, the
// node's scalars and the shrinks pending after it, and whether what the
// node remembers of the refusals (node_resources.pending_allocatable,
// reported_out_of_range) changed.
type scalarsReconcile struct {
	adopted    []string
	refused    []string
	reason     string
	after      core.NodeScalars
	pending    core.NodePendingScalars
	remembered bool
}

// reconcileScalars compares the daemon's configured scalars with the
// node's counters, which it locks (after the node row and its GPUs, in the
// lock order), and applies them (applyScalars).
func reconcileScalars(ctx context.Context, q *db.Queries, nodeID, poolID string, rep ReportedScalars) (scalarsReconcile, error) {
	rows, err := q.NodeResourceListForUpdate(ctx, nodeID)
	if err != nil {
		return scalarsReconcile{}, pg.Translate(err, "scalars of node "+nodeID)
	}
	return applyScalars(ctx, q, nodeID, poolID, rows, rep)
}

// applyScalars sets each of rep's scalars that differs from the node's
// locked counters (rows) and fits: the counter with a guarded update, the
// pool's rollup by the change of capacity. A shrink the bookings do not
// fit is remembered as the resource's pending shrink, and a value out of
// range as what the report stated out of range; every other value
// reported, and every value not reported, ends the one remembered (the
// report replaces what was remembered).
func applyScalars(ctx context.Context, q *db.Queries, nodeID, poolID string, rows []db.NodeResourceListForUpdateRow,
	rep ReportedScalars) (scalarsReconcile, error) {
	var out scalarsReconcile
	reported := map[string]*int64{core.ResourceVCPU: rep.VCPU, core.ResourceMemory: rep.MemoryMB, core.ResourceDisk: rep.DiskGB}
	pendingOut := map[string]**int64{core.ResourceVCPU: &out.pending.VCPU, core.ResourceMemory: &out.pending.MemoryMB,
		core.ResourceDisk: &out.pending.DiskGB}
	current := map[string]int64{}
	anyOutOfRange := false
	for _, r := range rows { // resource order: the lock order
		current[r.Resource] = r.Allocatable
		want := reported[r.Resource]
		var pending, outOfRange *int64 // what this report leaves remembered
		switch {
		case want == nil || *want == r.Allocatable:
		case *want < 0 || *want > MaxNodeScalar:
			out.refused = append(out.refused, outOfRangeRefusal(r.Resource, *want, r.Allocatable))
			outOfRange = want
			anyOutOfRange = true
		default:
			adopted, err := adoptScalar(ctx, q, nodeID, poolID, r, *want)
			if err != nil {
				return out, err
			}
			if !adopted {
				out.refused = append(out.refused, fmt.Sprintf("%s %d configured: bookings hold %d, more than it gives "+
					"at ratio %g; %d kept until they fit, new bookings held to %d", r.Resource, *want, r.Allocated, r.Ratio,
					r.Allocatable, *want))
				pending = want
				break
			}
			if r.PendingAllocatable != nil || r.ReportedOutOfRange != nil {
				out.remembered = true
			}
			r.PendingAllocatable, r.ReportedOutOfRange = nil, nil // the adoption ended them
			out.adopted = append(out.adopted, fmt.Sprintf("%s %d → %d", r.Resource, r.Allocatable, *want))
			current[r.Resource] = *want
		}
		if p, ok := pendingOut[r.Resource]; ok {
			*p = pending
		}
		if !equalInt64(pending, r.PendingAllocatable) || !equalInt64(outOfRange, r.ReportedOutOfRange) {
			if err := q.NodeResourceSetRefused(ctx, db.NodeResourceSetRefusedParams{PendingAllocatable: pending,
				ReportedOutOfRange: outOfRange, NodeID: nodeID, Resource: r.Resource}); err != nil {
				return out, pg.Translate(err, "node resource "+r.Resource)
			}
			out.remembered = true
		}
	}
	out.after = core.NodeScalars{VCPU: current[core.ResourceVCPU], MemoryMB: current[core.ResourceMemory],
		DiskGB: current[core.ResourceDisk]}
	out.reason = "BookingsDoNotFit"
	if anyOutOfRange {
		out.reason = "OutOfRange"
	}
	return out, nil
}

// adoptScalar sets the locked counter r's allocatable to want if every
// live and future booking on the node still fits it, as the database
// decides (NodeResourceSetAllocatable's guard), and moves the pool's
// rollup by the change of capacity. False: they would not; nothing
// changed.
func adoptScalar(ctx context.Context, q *db.Queries, nodeID, poolID string, r db.NodeResourceListForUpdateRow,
	want int64) (bool, error) {
	capacity, err := q.NodeResourceSetAllocatable(ctx, db.NodeResourceSetAllocatableParams{
		Allocatable: want, NodeID: nodeID, Resource: r.Resource})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, pg.Translate(err, "node resource "+r.Resource)
	}
	if delta := capacity - r.Capacity; delta != 0 {
		n, err := q.PoolCapacityRollupMoveCapacity(ctx, db.PoolCapacityRollupMoveCapacityParams{
			Delta: delta, PoolID: poolID, Resource: r.Resource})
		if err != nil {
			return false, pg.Translate(err, "pool capacity")
		}
		if n == 0 {
			return false, fmt.Errorf("pool %s capacity rollup for %s: %w", poolID, r.Resource, errRollupDrift)
		}
	}
	return true, nil
}

// outOfRangeRefusal is the ScalarsMismatch entry of a value out of range.
// The value itself is remembered (node_resources.reported_out_of_range),
// so that the node's resync, when it adopts a pending shrink, states this
// refusal again from the record rather than from the condition's words.
func outOfRangeRefusal(resource string, want, kept int64) string {
	return fmt.Sprintf("%s %d configured is out of range (0 to %d); %d kept", resource, want, int64(MaxNodeScalar), kept)
}

func equalInt64(a, b *int64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// message is the ScalarsMismatch condition's message, "" when every
// reported scalar is the record's.
func (s scalarsReconcile) message() string {
	return core.Clip(strings.Join(s.refused, "; "), ScalarsMismatchMaxBytes)
}
