package commands

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/placement"
)

// tryNode is one placement attempt on one node, inside the savepoint. It
// returns why the node could not take the request, or where it landed.
// It takes two round trips: the node's lock and free atoms, then, once
// the atoms are picked, every lock and write of the booking at once. With
// the node's free atoms listed already (a create's first attempt, from its
// candidates), it takes one: the atoms are picked first and the node's
// lock travels with the writes, checked on its result like the rest; and
// when p.finish is set (and the attempt charges no per-model quota and
// queues no assign), PostgreSQL checks it instead of Go (PlacementConfirm,
// the counters' CHECKs) and finish's writes and COMMIT go in the same
// batch. Locks follow the global order: nodes, devices, node_resources,
// pool_capacity_rollup (and node_desired, when it queues the assign). The
// writes are sent before their results are checked; any check that fails
// rolls the attempt back to the savepoint, which undoes the writes and
// releases the locks.
func (h *Handlers) tryNode(ctx context.Context, tx pgx.Tx, sp *savepoint, p reservationToPlace, req placement.Request,
	nodeID string, listed *listedAtoms) (*placed, string, error) {
	g := p.spec.GPU
	var atoms []string
	if listed != nil && g.Count > 0 {
		// In id order, as DeviceFreeAtoms lists them.
		slices.SortFunc(listed.free, func(a, b db.DeviceFreeAtomsRow) int { return strings.Compare(a.ID, b.ID) })
		var why string
		if atoms, why = placement.Pick(req, nodeID, freeAtomsOf(listed.free, g)); why != "" {
			listed = nil // read them again under the lock
		}
	}
	var b pg.Batch
	sp.begin(&b)
	var n db.NodeLockForPlacementRow
	pg.One(ctx, &b, (*db.Queries).NodeLockForPlacement, nodeID, &n, nil)
	var free []db.DeviceFreeAtomsRow
	var poolID string
	if listed != nil {
		free, poolID = listed.free, listed.poolID
	} else {
		if g.Count > 0 {
			pg.Many(ctx, &b, (*db.Queries).DeviceFreeAtoms, db.DeviceFreeAtomsParams{NodeID: nodeID, Kind: string(g.Kind),
				Model: optional(g.Model), Profile: optional(atomProfile(g)), FromTs: p.start, ToTs: p.end}, &free)
		}
		if err := b.Send(ctx, tx); err != nil {
			return nil, "", pg.Translate(err, "node "+nodeID)
		}
		if why := nodeIneligible(n.Cordoned, n.NoScheduleReasons, n.State, n.Taints, p.spec.Tolerations); why != "" {
			return nil, why + " (changed concurrently)", nil
		}
		if g.Count > 0 {
			var why string
			if atoms, why = placement.Pick(req, nodeID, freeAtomsOf(free, g)); why != "" {
				return nil, why + " (changed concurrently)", nil
			}
		}
		poolID, b = n.PoolID, pg.Batch{}
	}

	// An attempt from listed atoms that charges no per-model quota (whose
	// refusal is an answer of its own, not a lost race) and queues no
	// assign (which needs the node's new generation) leaves its checks to
	// PostgreSQL and carries the reservation and the COMMIT.
	modelCharges := modelChargesOf(p, free, atoms)
	commit := listed != nil && p.finish != nil && len(modelCharges) == 0 && !p.assign
	var r attemptResults
	if g.Count > 0 {
		pg.Many(ctx, &b, (*db.Queries).DeviceLockForBooking, atomsAndGPUs(atoms), &r.locked)
		if len(modelCharges) > 0 { // rows locked already (lockQuota): no new lock
			res, amounts := sortedAmounts(modelCharges)
			pg.Many(ctx, &b, (*db.Queries).QuotaUsageChargeMany, db.QuotaUsageChargeManyParams{TenantID: p.tenant,
				Resources: res, Amounts: amounts}, &r.modelCharged)
		}
	}
	where := &placed{allocationID: "alc_" + core.NewID().String(), nodeID: nodeID, poolID: poolID, deviceIDs: atoms,
		modelCharges: modelCharges}
	pg.Many(ctx, &b, (*db.Queries).AllocationCreateWithBookings, db.AllocationCreateWithBookingsParams{ID: where.allocationID,
		ReservationID: p.reservationID, NodeID: nodeID, DeviceIds: nonNil(atoms), Vcpu: p.spec.VCPU, Memory: p.spec.MemoryMB,
		Disk: p.spec.DiskGB, FromTs: p.start, ToTs: p.end}, &r.booked)
	scalars, amounts := scalarAmounts(p.spec, 1)
	if len(scalars) > 0 {
		pg.Many(ctx, &b, (*db.Queries).NodeResourceChargeMany, db.NodeResourceChargeManyParams{NodeID: nodeID,
			Resources: scalars, Amounts: amounts, Raise: commit}, &r.nodeCharged)
		pg.Many(ctx, &b, (*db.Queries).PoolCapacityRollupAdjustMany, db.PoolCapacityRollupAdjustManyParams{PoolID: poolID,
			Resources: scalars, Deltas: amounts, Raise: commit}, &r.rolledUp)
	}
	if p.assign { // last in the lock order: the node's generation, for the assign the caller queues
		pg.One(ctx, &b, (*db.Queries).NodeDesiredBump, nodeID, &where.generation, nil)
	}
	if commit {
		pg.Exec(ctx, &b, (*db.Queries).PlacementConfirm, db.PlacementConfirmParams{NodeID: nodeID,
			NodeVersion: listed.nodeVersion, PoolID: poolID, DeviceIds: nonNil(atomsAndGPUs(atoms)), Atoms: nonNil(atoms),
			AllocationID: where.allocationID, Resources: nonNil(scalars)})
		if err := p.finish(ctx, &b, where); err != nil {
			return nil, "", err
		}
	}
	if err := b.Send(ctx, tx); err != nil {
		why := refusedBeforeCommit(err)
		if pg.IsExclusionViolation(err) { // the constraint, the backstop of the btree check, refused one
			why = "a booking on " + nodeID + " was made concurrently"
		} else if !commit {
			why = ""
		}
		if why != "" {
			// A lost race, but the error has aborted the transaction, and
			// the next attempt may have statements to prepare, which an
			// aborted transaction refuses: back to the savepoint now (the
			// next attempt's rollback to it is then a no-op).
			if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+savepointName); err != nil {
				return nil, "", pg.Translate(err, "placement savepoint")
			}
			return nil, why, nil
		}
		if constraint, _ := pg.CheckViolated(err); commit && constraint == "pool_capacity_rollup_within_capacity" {
			return nil, "", fmt.Errorf("pool %s capacity rollup out of range: %w (%w)", poolID, errRollupDrift, err)
		}
		return nil, "", pg.Translate(err, "booking on "+nodeID)
	}

	why, err := r.check(ctx, tx, p, n, listed != nil, where, scalars, amounts)
	if commit && (why != "" || err != nil) {
		return nil, "", fmt.Errorf("placement on %s committed, yet its checks say %q %v: PlacementConfirm misses a check",
			nodeID, why, err)
	}
	if why != "" || err != nil {
		return nil, why, err
	}
	where.network, where.committed = n.WorkloadNetwork, commit
	if p.assign {
		where.devices = assignmentDevicesOf(r.locked, atoms)
	}
	return where, "", nil
}

// attemptResults is what an attempt's writes returned, for its checks.
type attemptResults struct {
	locked                                      []db.DeviceLockForBookingRow
	modelCharged, booked, nodeCharged, rolledUp []string
}

// check is the attempt's rules as of its locks, on its results: why the
// node could not take the booking after all (a lost race: the caller rolls
// back to the savepoint), or an error. fromList says the atoms were picked
// before the node's lock, which is then checked here too.
func (r *attemptResults) check(ctx context.Context, tx pgx.Tx, p reservationToPlace, n db.NodeLockForPlacementRow,
	fromList bool, where *placed, scalars []string, amounts []int64) (string, error) {
	if fromList {
		if why := nodeIneligible(n.Cordoned, n.NoScheduleReasons, n.State, n.Taints, p.spec.Tolerations); why != "" {
			return why + " (changed concurrently)", nil
		}
		if n.PoolID != where.poolID {
			return "moved to pool " + n.PoolID + " (changed concurrently)", nil
		}
	}
	if p.spec.GPU.Count > 0 {
		if why := checkLockedAtoms(r.locked, where.nodeID, where.deviceIDs); why != "" {
			return why, nil
		}
		if missing := firstMissing(where.modelCharges, r.modelCharged); missing != "" {
			return "", modelRefusal(ctx, db.New(tx), p.tenant, missing, where.modelCharges[missing])
		}
	}
	for _, id := range where.deviceIDs {
		if !slices.Contains(r.booked, id) {
			return id + " was booked concurrently", nil
		}
	}
	for i, res := range scalars {
		if !slices.Contains(r.nodeCharged, res) {
			return fmt.Sprintf("not enough %s left for %d (changed concurrently)", res, amounts[i]), nil
		}
	}
	for _, res := range scalars {
		if !slices.Contains(r.rolledUp, res) {
			return "", fmt.Errorf("pool %s capacity rollup for %s out of range: %w", where.poolID, res, errRollupDrift)
		}
	}
	return "", nil
}

// refusedBeforeCommit is why an attempt that carried its COMMIT failed, when
// PostgreSQL refused it for a lost race, or "" for any other error:
// PlacementConfirm's requirement, or a node counter with no room left
// (the table's CHECK: the attempt charged with raise). The pool's rollup
// out of range is not a race but drift, an error, as in check.
func refusedBeforeCommit(err error) string {
	if pg.IsRequirementFailed(err) {
		return "changed after the candidates were read"
	}
	if constraint, ok := pg.CheckViolated(err); ok && constraint == "node_resources_within_capacity" {
		return "not enough left on the node (changed concurrently)"
	}
	return ""
}

// modelChargesOf is the tenant's gpu:<model> charges for the atoms picked:
// the devices' model, whatever the request named, for the models that have
// a quota (their rows are locked already, by lockQuota).
func modelChargesOf(p reservationToPlace, free []db.DeviceFreeAtomsRow, atoms []string) map[string]int64 {
	modelOf := make(map[string]string, len(free))
	for _, r := range free {
		modelOf[r.ID] = r.Model
	}
	charges := map[string]int64{}
	for _, a := range atoms {
		if m := modelOf[a]; p.modelQuotas[m] {
			charges[core.GPUModelQuota(m)]++
		}
	}
	return charges
}

// modelRefusal is the modelQuotaRefusal for res, with its usage.
func modelRefusal(ctx context.Context, q *db.Queries, tenant, res string, amount int64) error {
	cur, err := q.QuotaUsageGet(ctx, db.QuotaUsageGetParams{TenantID: tenant, Resource: res})
	if err != nil {
		return pg.Translate(err, "quota "+res)
	}
	return &modelQuotaRefusal{msg: fmt.Sprintf("quota for %s exceeded: %d used of %d, this needs %d more",
		res, cur.Used, cur.Max, amount)}
}

// assignmentDevicesOf is the atoms among the locked rows as an assign
// describes them to the daemon.
func assignmentDevicesOf(locked []db.DeviceLockForBookingRow, atoms []string) []db.AssignmentDevicesRow {
	var out []db.AssignmentDevicesRow
	for _, d := range locked {
		if slices.Contains(atoms, d.ID) {
			out = append(out, db.AssignmentDevicesRow{ID: d.ID, Kind: d.Kind, ParentID: d.ParentID, Profile: d.Profile, MigUuid: d.MigUuid})
		}
	}
	return out
}

// atomsAndGPUs is the atoms and the GPUs they belong to, sorted: what the
// placer locks FOR NO KEY UPDATE, in id order.
func atomsAndGPUs(atoms []string) []string {
	ids := slices.Clone(atoms)
	for _, a := range atoms {
		if i := strings.IndexByte(a, '/'); i > 0 {
			ids = append(ids, a[:i])
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// lockAtoms locks the atoms and their GPUs FOR NO KEY UPDATE, in id order,
// exclusive among bookers so that DeviceBookingInsert's btree check sees
// every booking of the device committed before it (the exclusion
// constraint's GiST index can lose entries: see migration 0027), and
// checks them as of the lock (rule 4 for devices); extend uses it.
func lockAtoms(ctx context.Context, q *db.Queries, nodeID string, atoms []string) (string, error) {
	rows, err := q.DeviceLockForBooking(ctx, atomsAndGPUs(atoms))
	if err != nil {
		return "", pg.Translate(err, "devices")
	}
	return checkLockedAtoms(rows, nodeID, atoms), nil
}

// checkLockedAtoms checks the chosen atoms and their GPUs as of their lock
// (rule 4 for devices).
func checkLockedAtoms(rows []db.DeviceLockForBookingRow, nodeID string, atoms []string) string {
	byID := make(map[string]db.DeviceLockForBookingRow, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	for _, id := range atomsAndGPUs(atoms) {
		d, ok := byID[id]
		switch {
		case !ok:
			return id + " no longer exists"
		case d.NodeID != nodeID:
			return id + " is on another node"
		case d.Quarantined:
			return id + " was quarantined"
		case d.Health != HealthHealthy:
			return id + " is unhealthy"
		case slices.Contains(atoms, id) && (!d.Bookable || d.Retired):
			return id + " is no longer bookable (its GPU changed mode)"
		}
	}
	return ""
}
