// What ends with a reservation on its node: its allocations' unfinished
// instances move to stopping and an unassign is queued, in the
// transaction that ends it.

package commands

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// allocationEnds is what queueAllocationEnds read for each allocation: its
// unfinished instances (locked) and, when its node's daemon may hold it
// (assigned), the node's next generation, taken for the unassign, with the
// state of the job already under its unassign key.
type allocationEnds struct {
	instances [][]db.Instance
	bumps     []db.NodeDesiredBumpAtIfAssignedRow
	assigned  []bool
	// commit says the end is the last work of its transaction: the batch
	// of its last unassign commits too (pg.Batch.Commit).
	commit bool
	// grace, when set, is the stop grace each unassign asks the daemon for.
	grace *int32
}

// queueAllocationEnds queues the reads endAllocationsRead needs. wasActive
// says whether the reservation was active: only then can it have instances
// (instances.create inserts one only on an active reservation), so a
// booking that ends reads none.
func queueAllocationEnds(ctx context.Context, b *pg.Batch, r core.Reservation, allocs []db.AllocationListLiveRow,
	unassign, wasActive bool) *allocationEnds {
	e := &allocationEnds{instances: make([][]db.Instance, len(allocs)),
		bumps: make([]db.NodeDesiredBumpAtIfAssignedRow, len(allocs)), assigned: make([]bool, len(allocs))}
	for i, a := range allocs {
		if wasActive {
			pg.Many(ctx, b, (*db.Queries).InstanceListUnfinishedOfAllocationForUpdate,
				db.InstanceListUnfinishedOfAllocationForUpdateParams{AllocationID: a.ID, NodeID: a.NodeID}, &e.instances[i])
		}
	}
	if unassign {
		// Last in the lock order, and taken whether or not an unassign is
		// queued after all (one may be open under the key already): a
		// generation with no job behind it is applied at once, as a
		// scheduling flag's is, and costs no round trip of its own. None
		// is taken for an allocation never assigned (its window had not
		// begun): the daemon never held it.
		for i, a := range allocs {
			pg.One(ctx, b, (*db.Queries).NodeDesiredBumpAtIfAssigned, db.NodeDesiredBumpAtIfAssignedParams{NodeID: a.NodeID,
				AllocationID: a.ID, TenantID: r.Tenant}, &e.bumps[i], &e.assigned[i])
		}
	}
	return e
}

// endAllocationsRead is endAllocations from the reads of
// queueAllocationEnds: the instances are moved, and each unassign costs
// one round trip for the job with its event. tail holds what the end left
// for its last batch (the reservation's event): it goes with the first
// unassign, or in a batch of its own at the end, and before any instance
// moves, so that the events keep their order. The end's last batch
// carries the transaction's commit when e.commit.
func endAllocationsRead(ctx context.Context, tx pgx.Tx, q *db.Queries, identity string, r core.Reservation,
	allocs []db.AllocationListLiveRow, e *allocationEnds, reason string, unassign bool, tail *batchTail) error {
	send := func(b *pg.Batch, last bool) error {
		tail.queue(ctx, b)
		if e.commit && last {
			b.Commit()
		}
		return b.Send(ctx, tx)
	}
	for i, a := range allocs {
		to := core.ProvisionStopping
		if !unassign {
			to = core.ProvisionFailed
		}
		if len(e.instances[i]) > 0 && !tail.empty() {
			if err := send(&pg.Batch{}, false); err != nil {
				return pg.Translate(err, "reservation "+r.ID)
			}
		}
		for _, inst := range e.instances[i] {
			if _, err := walkInstance(ctx, q, inst, to, reason); err != nil {
				return err
			}
		}
		if !unassign || !e.assigned[i] {
			continue
		}
		job, ok, err := unassignJob(ctx, q, identity, unassignment{nodeID: a.NodeID, tenant: r.Tenant,
			allocationID: a.ID, known: true, reason: reason, grace: e.grace}, e.bumps[i].UnassignState,
			func() (db.NodeDesiredBumpAtRow, error) {
				return db.NodeDesiredBumpAtRow{Generation: e.bumps[i].Generation, Now: e.bumps[i].Now}, nil
			})
		if err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		var b pg.Batch
		if err := queueCommandIn(ctx, &b, tail, job); err != nil {
			return err
		}
		if err := send(&b, i == len(allocs)-1); err != nil {
			if pg.IsUniqueViolation(err) { // queued concurrently under the same key: its event must not stand
				return core.Wrap(core.CodeConflict, errChangedConcurrently, "the unassign of allocation "+a.ID+" was queued concurrently")
			}
			return pg.Translate(err, "unassign of "+a.ID)
		}
	}
	if !tail.empty() {
		if err := send(&pg.Batch{}, true); err != nil {
			return pg.Translate(err, "reservation "+r.ID)
		}
	}
	return nil
}

// moveUnfinishedInstances moves the allocation's instances on node that
// have not ended to state to, through the provision table (requested →
// stopping → stopped writes both events), with reason on the last step.
// Instances on other nodes are left alone: a node's report speaks for
// that node only.
func moveUnfinishedInstances(ctx context.Context, q *db.Queries, nodeID, allocationID string, to core.State, reason string) error {
	is, err := q.InstanceListUnfinishedOfAllocationForUpdate(ctx, db.InstanceListUnfinishedOfAllocationForUpdateParams{
		AllocationID: allocationID, NodeID: nodeID})
	if err != nil {
		return pg.Translate(err, "instances of allocation "+allocationID)
	}
	for _, i := range is {
		if _, err := walkInstance(ctx, q, i, to, reason); err != nil {
			return err
		}
	}
	return nil
}

// walkInstance moves a locked instance to state to through the provision
// table, reason on the last step. An instance that cannot reach it (already
// stopped or failed) is left as it is.
func walkInstance(ctx context.Context, q *db.Queries, i db.Instance, to core.State, reason string) (db.Instance, error) {
	steps := core.StatePath(core.ProvisionStateTable(), core.State(i.State), to)
	for _, step := range steps {
		why := ""
		if step == to {
			why = reason
		}
		var err error
		if i, _, err = moveInstance(ctx, q, i, step, why); err != nil {
			return i, err
		}
	}
	return i, nil
}
