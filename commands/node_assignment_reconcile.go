package commands

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
)

// KindNodeResync is the periodic resync of one node's assignments (key: the
// node id), every Config.NodeResyncEvery: see resyncNode; it also adopts
// the node's pending shrinks of scalars (retryPendingScalars). Every session
// open enqueues it, and every scheduling-flag change wakes it at once (so
// that the observed generation catches up with a change that needs
// nothing from the daemon).
const KindNodeResync = "node.resync"

// DefaultNodeResyncEvery is how often each node's assignments are resynced.
const DefaultNodeResyncEvery = 5 * time.Minute

func (h *Handlers) nodeResyncEvery() time.Duration {
	return orDefault(h.cfg.NodeResyncEvery, DefaultNodeResyncEvery)
}

// AssignmentReconcile says what a reconcile or resync of a node's
// assignments queued.
type AssignmentReconcile struct {
	// Repushed are the allocations whose assign was queued again.
	Repushed []string
	// Skipped counts the allocations the daemon holds and should not that
	// this report left for a later one (MaxUnassignsPerReport), or whose
	// id is no allocation's (too long, or not printable UTF-8).
	Skipped int
	// Unassigned are the allocations whose unassign was queued.
	Unassigned []string
	// Foreign are allocations the daemon claimed that are assigned to
	// another node. They are told to this node's daemon as unknown ones
	// (an unassign naming no allocation, of no tenant), so that nothing
	// the daemon reports about them reaches the other node's allocation or
	// instances.
	Foreign []string
}

func (r AssignmentReconcile) queued() bool { return len(r.Repushed)+len(r.Unassigned) > 0 }

// MaxUnassignsPerReport bounds the unassigns one report of a daemon queues
// for allocations it holds and should not; maxAllocationIDBytes is longer
// than any allocation id.
const (
	MaxUnassignsPerReport = 256
	maxAllocationIDBytes  = 128
)

// ReconcileNodeAssignments reconciles what a node's daemon reports holding,
// after it (re)connected at session epoch, with the node's desired
// assignments, both ways, in one transaction fenced by the epoch (a report
// of a superseded session is ErrSessionSuperseded and changes nothing):
//
//   - a live allocation of the node that the daemon does not hold (or holds
//     with another end) is assigned again under assign:<id>:r<epoch>,
//     unless an assign of it is still on its way;
//   - an allocation the daemon holds that is not live on the node (it ended
//     while the node was away, or the control plane never had it) is
//     unassigned under unassign:<id>, or unassign:<id>:r<epoch> when that
//     key already did its work, unless an unassign is on its way. One that
//     is assigned to another node is unassigned here as if unknown (see
//     AssignmentReconcile.Foreign): a node's report never touches another
//     node's allocation or instances.
//
// Live is as for the resync (see resyncNode): an allocation whose start
// passed before its activation ran is left to the activation.
//
// It then raises the session's observed generation to what the node has
// applied, records that the session's inventory was reconciled (dispatch
// sends the session no assign before, see heldAllocations), and wakes the
// node's dispatch.
func (s NodeSessions) ReconcileNodeAssignments(ctx context.Context, nodeID string, epoch int64,
	reported []ReportedAssignment) (AssignmentReconcile, error) {
	h := s.h
	var res AssignmentReconcile
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		res = AssignmentReconcile{}
		q := db.New(tx)
		_, err := q.NodeSessionLockAtEpoch(ctx, db.NodeSessionLockAtEpochParams{NodeID: nodeID, SessionEpoch: epoch})
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrSessionSuperseded
		}
		if err != nil {
			return pg.Translate(err, "node session")
		}
		live, jobs, err := nodeAssignmentState(ctx, q, nodeID)
		if err != nil {
			return err
		}
		held := make(map[string]time.Time, len(reported))
		for _, r := range reported {
			held[r.AllocationID] = r.End
		}
		for _, l := range live {
			if end, ok := held[l.AllocationID]; ok && end.Equal(l.EndTs) {
				continue
			}
			if hasOpen(jobs[l.AllocationID], core.NodeCommandAssign) {
				continue
			}
			key := fixedKey(fmt.Sprintf("%s%s:r%d", assignKeyPrefix, l.AllocationID, epoch))
			queued, err := enqueueAssign(ctx, q, system.Identity, l.AllocationID, key)
			if err != nil {
				return err
			}
			if queued {
				res.Repushed = append(res.Repushed, l.AllocationID)
			}
		}
		liveIDs := make(map[string]bool, len(live))
		for _, l := range live {
			liveIDs[l.AllocationID] = true
		}
		tried := 0
		for _, id := range slices.Sorted(maps.Keys(held)) {
			if id == "" || liveIDs[id] || hasOpen(jobs[id], core.NodeCommandUnassign) {
				continue
			}
			if len(id) > maxAllocationIDBytes || !core.Printable(id) || tried >= MaxUnassignsPerReport {
				// No allocation has such an id (one with a NUL would fail
				// the whole reconcile, and with it hold the session's
				// assigns back for good: see heldAllocations); and a report
				// listing thousands it should not hold is undone a slice at
				// a time (the rest at its next report), so that one daemon
				// cannot queue unbounded work in one transaction.
				res.Skipped++
				continue
			}
			tried++
			u, err := unassignmentOf(ctx, q, nodeID, id, "not assigned to this node any more")
			if err != nil {
				return err
			}
			if u.foreignNode != "" {
				res.Foreign = append(res.Foreign, id)
			}
			u.retryKey = fmt.Sprintf("%s%s:r%d", unassignKeyPrefix, id, epoch)
			queued, err := enqueueUnassign(ctx, q, system.Identity, u)
			if err != nil {
				return err
			}
			if queued {
				res.Unassigned = append(res.Unassigned, id)
			}
		}
		if err := raiseObserved(ctx, q, nodeID, epoch, 0); err != nil {
			return err
		}
		// The session may be sent assigns from now on: whatever the daemon
		// holds that nobody here knows has its unassign queued above, and
		// that holds them back (heldAllocations). Dispatch, woken below
		// when this commits, sends the ones that waited for it.
		rows, err := q.NodeSessionInventoryReconciled(ctx, db.NodeSessionInventoryReconciledParams{NodeID: nodeID,
			SessionEpoch: epoch})
		if err != nil {
			return pg.Translate(err, "node session")
		}
		if rows == 0 {
			return ErrSessionSuperseded // the row is locked at epoch: not reached
		}
		return workqueue.Enqueue(ctx, q, KindNodeJobDispatch, nodeID, 0)
	})
	if err != nil {
		return AssignmentReconcile{}, fmt.Errorf("reconcile assignments of node %s at epoch %d: %w", nodeID, epoch, err)
	}
	return res, nil
}

// resyncNode compares a node's live allocations with the outcomes of its
// assign and unassign jobs and queues what is missing, whether or not the
// node is connected (the jobs wait for it):
//
//   - a live allocation whose last assignment job is not an assign on its
//     way, or one that succeeded with the allocation's current end (it
//     failed for a transient reason, or the allocation was extended and
//     that assign failed), is assigned again under assign:<id>:g<generation>;
//   - an allocation that is not live but that the daemon may hold (an
//     assign of it not failed, and no unassign since, or only failed ones)
//     is unassigned (unassign:<id>, else unassign:<id>:g<generation>).
//
// Live is as NodeLiveAssignments says: what the booking or the activation
// sent, an allocation of an active reservation or one whose assign was
// queued. One whose start passed before its activation ran is not: the
// activation assigns it, and a resync in between that did too would have
// the daemon sent the same assign twice. So the resync only repairs.
//
// It then raises the current session's observed generation to what the
// node has applied. It reports done for a retired node. Its transaction is
// fenced by fence (nil: not fenced), so a worker whose shard lease was
// taken over cannot requeue jobs; workers run it as Reconcilers.NodeResync.
func (h *Handlers) resyncNode(ctx context.Context, nodeID string, fence func(pgx.Tx) error) (res AssignmentReconcile, done bool, err error) {
	err = pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		res, done = AssignmentReconcile{}, false
		if err := fenced(tx, fence); err != nil {
			return err
		}
		q := db.New(tx)
		n, err := q.NodeGet(ctx, nodeID)
		if err != nil {
			return pg.Translate(err, "node "+nodeID)
		}
		if core.State(n.State) == core.NodeRetired {
			done = true
			return nil
		}
		// Lock order: the session before any job (see RecordNodeJobResult).
		sess, err := q.NodeSessionLockCurrent(ctx, nodeID)
		hasSession := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return pg.Translate(err, "node session")
		}
		live, jobs, err := nodeAssignmentState(ctx, q, nodeID)
		if err != nil {
			return err
		}
		byGeneration := func(prefix, id string) assignKey {
			return func(g int64) string {
				if g == 0 {
					return "" // not known before the bump: unique by construction
				}
				return fmt.Sprintf("%s%s:g%d", prefix, id, g)
			}
		}
		liveIDs := make(map[string]bool, len(live))
		for _, l := range live {
			liveIDs[l.AllocationID] = true
			if assignedWith(jobs[l.AllocationID], l.EndTs) {
				continue
			}
			queued, err := enqueueAssign(ctx, q, system.Identity, l.AllocationID, byGeneration(assignKeyPrefix, l.AllocationID))
			if err != nil {
				return err
			}
			if queued {
				res.Repushed = append(res.Repushed, l.AllocationID)
			}
		}
		for _, id := range slices.Sorted(maps.Keys(jobs)) {
			if id == "" || liveIDs[id] || !mayHold(jobs[id]) {
				continue
			}
			u, err := unassignmentOf(ctx, q, nodeID, id, "its reservation ended")
			if err != nil {
				return err
			}
			queued, err := enqueueUnassign(ctx, q, system.Identity, u)
			if err != nil {
				return err
			}
			if queued {
				res.Unassigned = append(res.Unassigned, id)
			}
		}
		if hasSession {
			if err := raiseObserved(ctx, q, nodeID, sess.SessionEpoch, 0); err != nil {
				return err
			}
		}
		if res.queued() {
			return workqueue.Enqueue(ctx, q, KindNodeJobDispatch, nodeID, 0)
		}
		return nil
	})
	if err != nil {
		return AssignmentReconcile{}, false, fmt.Errorf("resync node %s: %w", nodeID, err)
	}
	if res.queued() {
		h.logger().Warn("resync queued missing assignment jobs", "node", nodeID, "repushed", res.Repushed,
			"unassigned", res.Unassigned)
	}
	return res, done, nil
}

// NodeResync is the KindNodeResync work-queue handler: it resyncs the
// node, adopts the shrinks of its scalars that were pending and fit now
// (retryPendingScalars), and runs again after NodeResyncEvery, until the
// node is retired.
func (r Reconcilers) NodeResync(ctx context.Context, it workqueue.Item) error {
	fence := fenceOf(ctx, it)
	_, done, err := r.h.resyncNode(ctx, it.Key, fence)
	if err != nil || done {
		return err
	}
	retried, err := r.h.retryPendingScalars(ctx, it.Key, fence)
	if err != nil {
		return err
	}
	if len(retried.Adopted) > 0 {
		r.h.logger().Info("adopted the node's pending scalars", "node", it.Key, "adopted", retried.Adopted)
	}
	return workqueue.Again(r.h.nodeResyncEvery())
}

// nodeAssignmentState reads the node's live allocations and its
// assignment jobs by allocation, oldest first.
func nodeAssignmentState(ctx context.Context, q *db.Queries, nodeID string) ([]db.NodeLiveAssignmentsRow,
	map[string][]db.NodeAssignmentJobsRow, error) {
	live, err := q.NodeLiveAssignments(ctx, nodeID)
	if err != nil {
		return nil, nil, pg.Translate(err, "live allocations")
	}
	rows, err := q.NodeAssignmentJobs(ctx, nodeID)
	if err != nil {
		return nil, nil, pg.Translate(err, "assignment jobs")
	}
	jobs := map[string][]db.NodeAssignmentJobsRow{}
	for _, r := range rows {
		jobs[r.AllocationID] = append(jobs[r.AllocationID], r)
	}
	return live, jobs, nil
}

// unassignmentOf is the unassign of an allocation the node's daemon holds:
// of its reservation's tenant, or a fleet job when the control plane does
// not know the allocation. An allocation assigned to another node is
// treated as unknown here (foreignNode names its node): the job names no
// allocation and belongs to no tenant, so its outcome cannot stop that
// node's instances, and it takes none of the tenant's keys.
func unassignmentOf(ctx context.Context, q *db.Queries, nodeID, allocationID, reason string) (unassignment, error) {
	u := unassignment{nodeID: nodeID, allocationID: allocationID, reason: reason}
	a, err := q.AllocationAssignment(ctx, allocationID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return u, pg.Translate(err, "allocation "+allocationID)
	case a.NodeID != nodeID:
		u.foreignNode = a.NodeID
	default:
		u.tenant, u.known = a.TenantID, true
	}
	return u, nil
}

func isOpen(state string) bool {
	switch core.State(state) {
	case core.CommandQueued, core.CommandSent, core.CommandRunning:
		return true
	}
	return false
}

// hasOpen reports whether a job of kind is queued or in flight.
func hasOpen(jobs []db.NodeAssignmentJobsRow, kind string) bool {
	return slices.ContainsFunc(jobs, func(j db.NodeAssignmentJobsRow) bool { return j.Kind == kind && isOpen(j.State) })
}

// assignedWith reports whether the allocation's last assignment job is an
// assign on its way, or one that succeeded with end.
func assignedWith(jobs []db.NodeAssignmentJobsRow, end time.Time) bool {
	if len(jobs) == 0 {
		return false
	}
	last := jobs[len(jobs)-1]
	if last.Kind != core.NodeCommandAssign {
		return false
	}
	if isOpen(last.State) {
		return true
	}
	if core.State(last.State) != core.CommandSucceeded {
		return false
	}
	got, err := time.Parse(time.RFC3339Nano, last.PayloadEnd)
	return err == nil && got.Equal(end)
}

// mayHold reports whether the daemon may hold the allocation, as its jobs
// tell: an assign of it that did not fail, and no unassign since that
// succeeded or is on its way.
func mayHold(jobs []db.NodeAssignmentJobsRow) bool {
	held := false
	for _, j := range jobs {
		switch {
		case j.Kind == core.NodeCommandAssign && (isOpen(j.State) || core.State(j.State) == core.CommandSucceeded):
			held = true
		case j.Kind == core.NodeCommandUnassign && (isOpen(j.State) || core.State(j.State) == core.CommandSucceeded):
			held = false
		}
	}
	return held
}
