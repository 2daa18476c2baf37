package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/wire"
)

// Assignments: an allocation reaches its node's daemon as an "assign" node
// job and leaves it as an "unassign" job. This file is the one place that
// builds their payloads and queues them.
//
// Each is queued in the transaction that changes the node's desired spec
// (booking or activation, extension, release, cancel, expiry, node
// release, and the reconcile and resync re-pushes), which bumps the node's
// generation (node_desired) and puts the new generation in the payload.
//
// When: at the window's start (assignment_timing.go).
//
// Both are retry-safe (the daemon carries out a repeat as a no-op), so a
// daemon that lost its journal is sent them again rather than failing them.
//
// Ordering. Dispatch sends a node's jobs in the order they were queued, and
// the daemon carries out assigns in the order they arrive, before it reads
// the next message. Unassigns it carries out in the background: it stops
// the allocation's workloads first and holds the devices meanwhile, so an
// assign of the same devices for the next tenant, sent before the
// unassign concluded, would be refused. Dispatch therefore holds back an
// assign queued after an open unassign of an allocation that shares a GPU
// with it, and every job of its allocation with it (heldAllocations); an
// assign of other GPUs goes at once. An open unassign of an allocation the
// control plane does not know holds back every assign of the node, queued
// before it or after it.

// Idempotency keys of assignment jobs, unique per (node, tenant, key).
const (
	assignKeyPrefix   = "assign:"
	unassignKeyPrefix = "unassign:"
)

// AssignRefusedPrefix starts the reason of an assign the daemon refused
// because it overlaps, in devices and window, an allocation it holds.
const AssignRefusedPrefix = wire.RefusedPrefix

// ReportedAssignment is one assignment a node's daemon reports holding
// (wire.AssignPayload in its inventory, converted by the gateway).
type ReportedAssignment struct {
	AllocationID string
	End          time.Time
}

// assignmentPayload builds the assign payload of an allocation at
// generation: its atoms in the allocation's order, its scalars, and its
// reservation's window [start, end).
//
//   - a whole GPU is visible as its UUID (the device id);
//   - a MIG atom belongs to its parent GPU and is visible as its MIG
//     instance's UUID (devices.mig_uuid, recorded from the daemon's
//     inventory) or, until an inventory named it, as the atom's id;
//   - a time-slice or MPS slot is visible as its parent GPU, with its mode.
func assignmentPayload(ctx context.Context, q *db.Queries, a db.AllocationAssignmentRow, generation int64) (wire.AssignPayload, error) {
	var rows []db.AssignmentDevicesRow
	if len(a.DeviceIds) > 0 {
		var err error
		if rows, err = q.AssignmentDevices(ctx, a.DeviceIds); err != nil {
			return wire.AssignPayload{}, pg.Translate(err, "devices of allocation "+a.ID)
		}
	}
	return assignmentPayloadOf(a, generation, rows)
}

// assignmentPayloadOf is assignmentPayload with the allocation's atoms
// already read (AssignmentDevices). Network is the pool's mode, left out
// for none: a daemon reads an absent mode as none, so a payload of a pool
// without networking is the same as before pools chose one.
func assignmentPayloadOf(a db.AllocationAssignmentRow, generation int64, rows []db.AssignmentDevicesRow) (wire.AssignPayload, error) {
	p := wire.AssignPayload{AllocationID: a.ID, ReservationID: a.ReservationID, Devices: []wire.AssignedDevice{},
		VCPU: a.Vcpu, MemoryMB: a.Memory, DiskGB: a.Disk, Start: a.StartTs.UTC(), End: a.EndTs.UTC(),
		Generation: generation}
	if a.WorkloadNetwork != WorkloadNetworkNone {
		p.Network = a.WorkloadNetwork
	}
	byID := make(map[string]db.AssignmentDevicesRow, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	for _, id := range a.DeviceIds {
		r, ok := byID[id]
		if !ok {
			return p, fmt.Errorf("allocation %s: device %s not found", a.ID, id)
		}
		d := wire.AssignedDevice{ID: id, GPU: id, Kind: r.Kind, Visible: id}
		if r.ParentID != nil {
			d.GPU = *r.ParentID
		}
		switch core.AtomKind(r.Kind) {
		case core.AtomMIG:
			if r.MigUuid != nil {
				d.Visible = *r.MigUuid
			}
		case core.AtomSlot:
			d.Visible = d.GPU
			if r.Profile != nil {
				d.Mode = *r.Profile
			}
		}
		p.Devices = append(p.Devices, d)
	}
	return p, nil
}

// assignKey names the assignment job queued at a generation.
type assignKey func(generation int64) string

// fixedKey is a key that does not depend on the generation.
func fixedKey(k string) assignKey { return func(int64) string { return k } }

// enqueueAssign queues an assign of the allocation under key, bumping its
// node's generation, unless the node already has a job under that key (a
// repeat queues nothing) or the allocation was released. It reports whether
// it queued one.
//
// A released allocation is never assigned again: its unassign is queued
// already, and an assign after it would make dispatch hold both for ever
// (an allocation's jobs wait behind an open unassign of its GPU, its own
// included), and every later assign of that GPU with them. The resync and
// the reconcile read the node's live allocations without locking them, so
// a release may commit after that read: the allocation is read again after
// the node's generation is bumped, since a release bumps it too, and one in
// flight has committed by then (the bump alone, with no job, asks nothing
// of the daemon).
func enqueueAssign(ctx context.Context, q *db.Queries, identity, allocationID string, key assignKey) (bool, error) {
	a, err := q.AllocationAssignment(ctx, allocationID)
	if err != nil {
		return false, pg.Translate(err, "allocation "+allocationID)
	}
	if a.Released {
		return false, nil
	}
	if k := key(0); k != "" {
		if taken, err := keyTaken(ctx, q, a.NodeID, a.TenantID, k); err != nil || taken {
			return false, err
		}
	}
	generation, err := q.NodeDesiredBump(ctx, a.NodeID)
	if err != nil {
		return false, pg.Translate(err, "node "+a.NodeID)
	}
	if a, err = q.AllocationAssignment(ctx, allocationID); err != nil {
		return false, pg.Translate(err, "allocation "+allocationID)
	}
	if a.Released {
		return false, nil
	}
	p, err := assignmentPayload(ctx, q, a, generation)
	if err != nil {
		return false, err
	}
	payload, err := json.Marshal(p)
	if err != nil {
		return false, fmt.Errorf("encode assign: %w", err)
	}
	_, err = queueNodeCommand(ctx, q, db.NodeCommandInsertParams{ID: "cmd_" + core.NewID().String(), TenantID: a.TenantID,
		Identity: identity, NodeID: a.NodeID, AllocationID: &a.ID, IdempotencyKey: key(generation),
		Kind: core.NodeCommandAssign, RetrySafe: true, Payload: payload, Generation: &generation})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // queued concurrently under the same key
	}
	return err == nil, err
}

// queueNewAssign queues, in b, the assign of an allocation booked in this
// transaction, whose node generation the booking already bumped
// (placement.assign): the job, its node_assignment.queued event and the
// node's dispatch, all in the caller's next round trip. The allocation is
// new, so no job can hold its key yet (a taken key fails the transaction:
// queueCommandIn).
func queueNewAssign(ctx context.Context, b *pg.Batch, tail *batchTail, identity string, a db.AllocationAssignmentRow,
	where *placed, now time.Time) error {
	p, err := assignmentPayloadOf(a, where.generation, where.devices)
	if err != nil {
		return err
	}
	payload, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode assign: %w", err)
	}
	generation := where.generation
	return queueCommandIn(ctx, b, tail, db.NodeCommandInsertAtParams{ID: "cmd_" + core.NewID().String(), TenantID: a.TenantID,
		Identity: identity, NodeID: a.NodeID, AllocationID: &a.ID, IdempotencyKey: assignKeyPrefix + a.ID,
		Kind: core.NodeCommandAssign, RetrySafe: true, Payload: payload, Generation: &generation, CreatedAt: now})
}

// unassignment is one unassign to queue.
type unassignment struct {
	nodeID       string
	tenant       string // the reservation's; "" for an allocation the control plane does not know
	allocationID string
	known        bool // the allocation exists on this node (allocation_id is set)
	// foreignNode is the node an allocation the daemon claimed is really
	// assigned to, when that is another node; the unassign is then an
	// unknown one (known is false).
	foreignNode string
	reason      string
	// grace, when set, is the stop grace the daemon gives the allocation's
	// workloads (a preempted reservation's class grace).
	grace *int32
	// retryKey is the key used when unassign:<allocationId> is taken by a
	// job that did not take the allocation back (or that did, and the
	// daemon holds it again); "" means unassign:<id>:g<generation>.
	retryKey string
}

// enqueueUnassign queues an unassign under unassign:<allocationId>, bumping
// the node's generation. When that key is taken: by a job still open,
// nothing is queued (it is on its way); by a finished one, the unassign is
// queued again under u.retryKey. It reports whether it queued one.
func enqueueUnassign(ctx context.Context, q *db.Queries, identity string, u unassignment) (bool, error) {
	prev, err := q.NodeCommandGetByKey(ctx, db.NodeCommandGetByKeyParams{NodeID: u.nodeID, TenantID: u.tenant,
		IdempotencyKey: unassignKeyPrefix + u.allocationID})
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return false, pg.Translate(err, "node command")
	}
	params, ok, err := unassignJob(ctx, q, identity, u, prev.State, func() (db.NodeDesiredBumpAtRow, error) {
		return q.NodeDesiredBumpAt(ctx, u.nodeID)
	})
	if err != nil || !ok {
		return false, err
	}
	_, err = queueNodeCommand(ctx, q, db.NodeCommandInsertParams{ID: params.ID, TenantID: params.TenantID,
		Identity: params.Identity, NodeID: params.NodeID, AllocationID: params.AllocationID,
		IdempotencyKey: params.IdempotencyKey, Kind: params.Kind, RetrySafe: params.RetrySafe,
		Payload: params.Payload, Generation: params.Generation})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// unassignJob decides, from the state of the job already under
// unassign:<allocationId> ("" when there is none), whether and under which
// key to queue u; when it does, it takes the node's next generation from
// bump and returns the job to insert (created now, as compute_now() says).
func unassignJob(ctx context.Context, q *db.Queries, identity string, u unassignment, prevState string,
	bump func() (db.NodeDesiredBumpAtRow, error)) (db.NodeCommandInsertAtParams, bool, error) {
	var none db.NodeCommandInsertAtParams
	key := fixedKey(unassignKeyPrefix + u.allocationID)
	switch {
	case prevState == "":
	case !core.CommandStateTable().Terminal[core.State(prevState)]:
		return none, false, nil
	case u.retryKey != "":
		key = fixedKey(u.retryKey)
		if taken, err := keyTaken(ctx, q, u.nodeID, u.tenant, u.retryKey); err != nil || taken {
			return none, false, err
		}
	default:
		key = func(g int64) string { return fmt.Sprintf("%s%s:g%d", unassignKeyPrefix, u.allocationID, g) }
	}
	next, err := bump()
	if err != nil {
		return none, false, pg.Translate(err, "node "+u.nodeID)
	}
	payload, err := json.Marshal(wire.UnassignPayload{AllocationID: u.allocationID, Reason: u.reason, Generation: next.Generation,
		GraceSeconds: u.grace})
	if err != nil {
		return none, false, fmt.Errorf("encode unassign: %w", err)
	}
	var alloc *string
	if u.known {
		alloc = &u.allocationID
	}
	generation := next.Generation
	return db.NodeCommandInsertAtParams{ID: "cmd_" + core.NewID().String(), TenantID: u.tenant,
		Identity: identity, NodeID: u.nodeID, AllocationID: alloc, IdempotencyKey: key(generation),
		Kind: core.NodeCommandUnassign, RetrySafe: true, Payload: payload, Generation: &generation, CreatedAt: next.Now}, true, nil
}

// queueCommandIn is queueNodeCommand queued in b: the job goes in b, its
// queued event and the node's dispatch in tail, to travel in the same
// round trip. The event is built from the values the insert writes. The
// job's key must be free: a taken one is a unique violation that fails
// the batch and aborts the transaction (the event with it), so b may also
// commit.
func queueCommandIn(ctx context.Context, b *pg.Batch, tail *batchTail, p db.NodeCommandInsertAtParams) error {
	if err := core.CheckTransition(core.CommandStateTable(), core.StateNone, core.CommandQueued); err != nil {
		return err
	}
	c, err := nodeCommandView(db.NodeCommand{ID: p.ID, TenantID: p.TenantID, Identity: p.Identity, NodeID: p.NodeID,
		AllocationID: p.AllocationID, IdempotencyKey: p.IdempotencyKey, Kind: p.Kind, RetrySafe: p.RetrySafe,
		Payload: p.Payload, MinGeneration: p.MinGeneration, State: string(core.CommandQueued), Version: 1,
		CreatedAt: p.CreatedAt, InstanceID: p.InstanceID, Generation: p.Generation})
	if err != nil {
		return err
	}
	pg.ExecRows(ctx, b, (*db.Queries).NodeCommandInsertNew, db.NodeCommandInsertNewParams(p), nil)
	typ, tenant := core.NodeJobEvent(c.Kind, core.CommandQueued, c.Tenant)
	if err := tail.emit(typ, tenant, core.NodeCommandSubject(c.ID), c, nil); err != nil {
		return err
	}
	tail.wake(workqueue.Wake{Kind: KindNodeJobDispatch, Key: p.NodeID})
	return nil
}

// keyTaken reports whether the node has a job of tenant under key.
func keyTaken(ctx context.Context, q *db.Queries, nodeID, tenant, key string) (bool, error) {
	_, err := q.NodeCommandGetByKey(ctx, db.NodeCommandGetByKeyParams{NodeID: nodeID, TenantID: tenant, IdempotencyKey: key})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, pg.Translate(err, "node command")
	}
	return true, nil
}

// bumpGeneration records a change of the node's desired spec that needs
// nothing from its daemon (a scheduling flag): the generation moves on, and
// the node has applied it as soon as every assignment change before it
// concluded (NodeAppliedGeneration). The node's resync is woken, so that
// its observed generation shows it without waiting for the daemon's next
// report.
func bumpGeneration(ctx context.Context, q *db.Queries, nodeID string) error {
	if _, err := q.NodeDesiredBump(ctx, nodeID); err != nil {
		return pg.Translate(err, "node "+nodeID)
	}
	return workqueue.Enqueue(ctx, q, KindNodeResync, nodeID, 0)
}

// raiseObserved raises the session's observed generation (at epoch) to
// what the node has applied: the daemon's report, and every change below
// its oldest open assignment job (NodeAppliedGeneration).
func raiseObserved(ctx context.Context, q *db.Queries, nodeID string, epoch, reported int64) error {
	applied, err := q.NodeAppliedGeneration(ctx, nodeID)
	if err != nil {
		return pg.Translate(err, "node generation")
	}
	err = q.NodeSessionRaiseObserved(ctx, db.NodeSessionRaiseObservedParams{NodeID: nodeID, SessionEpoch: epoch,
		ObservedGeneration: max(applied, reported)})
	return pg.Translate(err, "node session")
}
