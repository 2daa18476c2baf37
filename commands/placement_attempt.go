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
// lock travels with the writes, checked on its result like the rest.
// Locks follow the global order: nodes, devices, node_resources,
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

	var locked []db.DeviceLockForBookingRow
	var devices []db.AssignmentDevicesRow
	var modelCharged []string
	modelCharges := modelChargesOf(p, free, atoms)
	if g.Count > 0 {
		pg.Many(ctx, &b, (*db.Queries).DeviceLockForBooking, atomsAndGPUs(atoms), &locked)
		if len(modelCharges) > 0 { // rows locked already (lockQuota): no new lock
			res, amounts := sortedAmounts(modelCharges)
			pg.Many(ctx, &b, (*db.Queries).QuotaUsageChargeMany, db.QuotaUsageChargeManyParams{TenantID: p.tenant,
				Resources: res, Amounts: amounts}, &modelCharged)
		}
	}
	allocationID := "alc_" + core.NewID().String()
	var booked []string
	pg.Many(ctx, &b, (*db.Queries).AllocationCreateWithBookings, db.AllocationCreateWithBookingsParams{ID: allocationID,
		ReservationID: p.reservationID, NodeID: nodeID, DeviceIds: nonNil(atoms), Vcpu: p.spec.VCPU, Memory: p.spec.MemoryMB,
		Disk: p.spec.DiskGB, FromTs: p.start, ToTs: p.end}, &booked)
	scalars, amounts := scalarAmounts(p.spec, 1)
	var nodeCharged, rolledUp []string
	if len(scalars) > 0 {
		pg.Many(ctx, &b, (*db.Queries).NodeResourceChargeMany, db.NodeResourceChargeManyParams{NodeID: nodeID,
			Resources: scalars, Amounts: amounts}, &nodeCharged)
		pg.Many(ctx, &b, (*db.Queries).PoolCapacityRollupAdjustMany, db.PoolCapacityRollupAdjustManyParams{PoolID: poolID,
			Resources: scalars, Deltas: amounts}, &rolledUp)
	}
	var generation int64
	if p.assign { // last in the lock order: the node's generation, for the assign the caller queues
		pg.One(ctx, &b, (*db.Queries).NodeDesiredBump, nodeID, &generation, nil)
	}
	if err := b.Send(ctx, tx); err != nil {
		if pg.IsExclusionViolation(err) { // the constraint, the backstop of the btree check, refused one
			if err := sp.rollBackNow(ctx, tx); err != nil {
				return nil, "", err
			}
			return nil, "a booking on " + nodeID + " was made concurrently", nil
		}
		return nil, "", pg.Translate(err, "booking on "+nodeID)
	}

	if listed != nil {
		if why := nodeIneligible(n.Cordoned, n.NoScheduleReasons, n.State, n.Taints, p.spec.Tolerations); why != "" {
			return nil, why + " (changed concurrently)", nil
		}
		if n.PoolID != poolID {
			return nil, "moved to pool " + n.PoolID + " (changed concurrently)", nil
		}
	}
	if g.Count > 0 {
		if why := checkLockedAtoms(locked, nodeID, atoms, g); why != "" {
			return nil, why, nil
		}
		if p.assign {
			devices = assignmentDevicesOf(locked, atoms)
		}
		if missing := firstMissing(modelCharges, modelCharged); missing != "" {
			return nil, "", modelRefusal(ctx, db.New(tx), p.tenant, missing, modelCharges[missing])
		}
	}
	for _, id := range atoms {
		if !slices.Contains(booked, id) {
			return nil, id + " was booked concurrently", nil
		}
	}
	for i, r := range scalars {
		if !slices.Contains(nodeCharged, r) {
			return nil, fmt.Sprintf("not enough %s left for %d (changed concurrently)", r, amounts[i]), nil
		}
	}
	for _, r := range scalars {
		if !slices.Contains(rolledUp, r) {
			return nil, "", fmt.Errorf("pool %s capacity rollup for %s out of range: %w", poolID, r, errRollupDrift)
		}
	}
	return &placed{allocationID: allocationID, nodeID: nodeID, poolID: poolID, network: n.WorkloadNetwork, deviceIDs: atoms,
		modelCharges: modelCharges, generation: generation, devices: devices}, "", nil
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
func lockAtoms(ctx context.Context, q *db.Queries, nodeID string, atoms []string, g core.GPURequest) (string, error) {
	rows, err := q.DeviceLockForBooking(ctx, atomsAndGPUs(atoms))
	if err != nil {
		return "", pg.Translate(err, "devices")
	}
	return checkLockedAtoms(rows, nodeID, atoms, g), nil
}

// checkLockedAtoms checks the chosen atoms and their GPUs as of their lock
// (rule 4 for devices), and that each atom is still of the kind and
// profile g asks for: a mode change retires a GPU's atoms and creates the
// new layout's under the same ids (mig-0, s0), so an atom chosen as a
// 1g.10gb instance, or a time-slice slot, may be a 7g.80gb instance, or an
// MPS slot, by the time it is locked.
func checkLockedAtoms(rows []db.DeviceLockForBookingRow, nodeID string, atoms []string, g core.GPURequest) string {
	byID := make(map[string]db.DeviceLockForBookingRow, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	profile := atomProfile(g)
	for _, id := range atomsAndGPUs(atoms) {
		d, ok := byID[id]
		atom := slices.Contains(atoms, id)
		switch {
		case !ok:
			return id + " no longer exists"
		case d.NodeID != nodeID:
			return id + " is on another node"
		case d.Quarantined:
			return id + " was quarantined"
		case d.Health != HealthHealthy:
			return id + " is unhealthy"
		case atom && (!d.Bookable || d.Retired):
			return id + " is no longer bookable (its GPU changed mode)"
		case atom && (d.Kind != string(g.Kind) || (profile != "" && (d.Profile == nil || *d.Profile != profile))):
			return id + " is no longer of the kind asked for (its GPU changed mode)"
		}
	}
	return ""
}
