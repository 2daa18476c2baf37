package commands

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	placer "github.com/bettercompute/compute/placement"
)

// placement is one reservation's request as the placer sees it. The
// decision (which nodes fit, in which order, which atoms) is package
// placement's, imported as placer because of this type's name; this file
// loads its candidates and books its choices.
type placement struct {
	reservationID string
	poolIDs       []string
	spec          core.ReservationSpec
	start, end    time.Time
	// tenant is charged gpu:<model> for the model of the atoms booked,
	// when modelQuotas (rows the transaction has locked) has that model.
	tenant      string
	modelQuotas map[string]bool
	// quotaFinal: when every node that fits was refused for its model's
	// quota, place answers QUOTA_EXCEEDED instead of nothing (create does;
	// the pending retry leaves the reservation pending).
	quotaFinal bool
	// assign: the attempt that books also bumps the node's generation and
	// reads the atoms for the assign the caller queues in its next batch
	// (create); otherwise the caller queues it itself (enqueueAssign).
	assign bool
}

// placed is where a placement landed.
type placed struct {
	allocationID string
	nodeID       string
	poolID       string
	deviceIDs    []string
	// modelCharges is the per-model quota charged: gpu:<model> → atoms.
	modelCharges map[string]int64
	// With placement.assign: the node's generation, bumped for the assign
	// the caller queues, and the atoms as the assign's payload needs them.
	generation int64
	devices    []db.AssignmentDevicesRow
}

// modelQuotaRefusal is an attempt refused because the tenant's quota for
// the model of the node's atoms is used up: not a lost race, so it does not
// count towards the attempts; the placer tries the next node.
type modelQuotaRefusal struct{ msg string }

func (e *modelQuotaRefusal) Error() string { return e.msg }

// maxReasons bounds the node-by-node explanation kept on a pending
// reservation, so that a large pool does not make a huge condition.
const maxReasons = 20

// place tries to place p on one node of its pools: it reads the
// candidates, places (placeWith), and ends the placement's savepoint at
// once. It returns nil and the reasons, node by node, when nothing fit; an
// error only for a failure that is not a lost race.
func (h *Handlers) place(ctx context.Context, tx pgx.Tx, p placement) (*placed, []string, error) {
	sample := int32(h.placementSample())
	cands, err := placementCandidates(ctx, db.New(tx), p, &sample)
	if err != nil {
		return nil, nil, err
	}
	var tail pg.Batch
	where, reasons, err := h.placeWith(ctx, tx, p, cands, int(sample), &tail)
	if err != nil {
		return nil, nil, err
	}
	if err := tail.Send(ctx, tx); err != nil {
		return nil, nil, pg.Translate(err, "placement savepoint")
	}
	return where, reasons, nil
}

// placeWith places p given the candidates of a sample of at most sample
// nodes (see below). Each attempt runs under a savepoint: a node, atom or
// counter conflict, or a deadlock or serialization failure, rolls back to it
// and the placer replans without that node, at most PlacementAttempts times.
// The savepoint's end (released on success, rolled back to after a failed
// last attempt) is queued in tail, for the caller to send with its next
// statements: it must send tail before anything else in the transaction.
func (h *Handlers) placeWith(ctx context.Context, tx pgx.Tx, p placement, cands []placer.Candidate, sample int,
	tail *pg.Batch) (*placed, []string, error) {
	req := placementRequest(p)
	// A sample first: in a large pool, best fit among PlacementSample
	// nodes instead of a free-atom count for every node. When nothing in
	// the sample fits, all nodes are considered, so a reservation goes
	// pending only when no node fits, with every node's reason.
	d := placer.Decide(req, cands)
	if len(d.Choices) == 0 && len(cands) == sample {
		var err error
		if cands, err = placementCandidates(ctx, db.New(tx), p, nil); err != nil {
			return nil, nil, err
		}
		d = placer.Decide(req, cands)
	}
	var reasons []string
	for _, r := range d.Rejected {
		reasons = append(reasons, r.NodeID+": "+r.Reason)
	}
	if len(cands) == 0 {
		reasons = append(reasons, "the pool has no nodes")
	}
	conflicts := 0
	var quotaRefused []string
	var sp savepoint
	for i, c := range d.Choices {
		if conflicts == h.placementAttempts() {
			if h.ReplanCapReached != nil {
				h.ReplanCapReached()
			}
			reasons = append(reasons, fmt.Sprintf("%d more nodes not tried after %d conflicts", len(d.Choices)-i, conflicts))
			break
		}
		res, why, err := h.tryNode(ctx, tx, &sp, p, req, c.NodeID)
		var refusal *modelQuotaRefusal
		if errors.As(err, &refusal) {
			sp.dirty = true
			quotaRefused = append(quotaRefused, refusal.msg)
			reasons = append(reasons, c.NodeID+": "+refusal.msg)
			continue
		}
		if err != nil && !pg.IsRetryable(err) {
			return nil, nil, err
		}
		if err != nil || why != "" {
			if err != nil {
				why = "lost a race with a concurrent change (" + err.Error() + ")"
			}
			sp.dirty = true
			reasons = append(reasons, c.NodeID+": "+why)
			conflicts++
			continue
		}
		tail.Statement("RELEASE SAVEPOINT " + savepointName)
		return res, nil, nil
	}
	if sp.dirty {
		tail.Statement("ROLLBACK TO SAVEPOINT " + savepointName)
	}
	if p.quotaFinal && len(quotaRefused) > 0 && len(quotaRefused) == len(d.Choices) {
		return nil, nil, core.Errorf(core.CodeQuotaExceeded, "%s", quotaRefused[0])
	}
	if len(reasons) > maxReasons {
		reasons = append(reasons[:maxReasons], fmt.Sprintf("and %d more nodes", len(reasons)-maxReasons))
	}
	return nil, reasons, nil
}

// savepointName names the savepoint placement attempts run under.
const savepointName = "placement"

// savepoint is the state of the placement's savepoint: set with the first
// attempt's statements, rolled back to with the next attempt's when the
// last one failed. Both travel in the attempt's first batch, so a replan
// costs no round trip of its own.
type savepoint struct{ open, dirty bool }

// begin queues what the next attempt needs first.
func (s *savepoint) begin(b *pg.Batch) {
	switch {
	case !s.open:
		b.Statement("SAVEPOINT " + savepointName)
		s.open = true
	case s.dirty:
		b.Statement("ROLLBACK TO SAVEPOINT " + savepointName)
		s.dirty = false
	}
}

// placementRequest is p as placer.Decide takes it.
func placementRequest(p placement) placer.Request {
	g := p.spec.GPU
	return placer.Request{Reservation: p.reservationID, GPUs: g.Count, Kind: g.Kind, Model: g.Model,
		MIGProfile: g.MIGProfile, SlotKind: g.SlotKind, VCPU: p.spec.VCPU, MemoryMB: p.spec.MemoryMB,
		DiskGB: p.spec.DiskGB, Tolerations: p.spec.Tolerations}
}

// placementCandidates reads the nodes of p's pools with their free
// capacity: maxNodes of them in an order hashed from the reservation, or
// all when maxNodes is nil.
func placementCandidates(ctx context.Context, q *db.Queries, p placement, maxNodes *int32) ([]placer.Candidate, error) {
	rows, err := q.NodePlacementCandidates(ctx, candidatesParams(p, maxNodes))
	if err != nil {
		return nil, pg.Translate(err, "placement candidates")
	}
	return placementCandidatesOf(rows), nil
}

// candidatesParams is NodePlacementCandidates' arguments for p.
func candidatesParams(p placement, maxNodes *int32) db.NodePlacementCandidatesParams {
	g := p.spec.GPU
	return db.NodePlacementCandidatesParams{
		Kind: string(g.Kind), Model: optional(g.Model), Profile: optional(atomProfile(g)),
		FromTs: p.start, ToTs: p.end, PoolIds: nonNil(p.poolIDs), Seed: p.reservationID, MaxNodes: maxNodes,
	}
}

// placementCandidatesOf is the adapter from the candidates query to
// placement: the query counted each node's free matching atoms (it does not
// list them; tryNode does, under the node lock).
func placementCandidatesOf(rows []db.NodePlacementCandidatesRow) []placer.Candidate {
	cands := make([]placer.Candidate, len(rows))
	for i, r := range rows {
		cands[i] = placer.Candidate{NodeID: r.ID,
			Eligibility: placer.Eligibility{Cordoned: r.Cordoned, NoScheduleReasons: r.NoScheduleReasons,
				State: r.State, Taints: r.Taints},
			FreeAtoms: r.FreeAtoms, FreeVCPU: r.FreeVcpu, FreeMemoryMB: r.FreeMemory, FreeDiskGB: r.FreeDisk}
	}
	return cands
}

// freeAtomsOf is the adapter from DeviceFreeAtoms, which returns only the
// free atoms that match g and are bookable (devices.bookable, the atom rule),
// healthy and not quarantined, nor their GPU: each is such an atom, its GPU
// in the mode that exposes it.
func freeAtomsOf(rows []db.DeviceFreeAtomsRow, g core.GPURequest) []placer.Atom {
	mode := core.GPUExclusive
	switch g.Kind {
	case core.AtomMIG:
		mode = core.GPUMIG
	case core.AtomSlot:
		mode = g.SlotKind
	}
	atoms := make([]placer.Atom, len(rows))
	for i, r := range rows {
		atoms[i] = placer.Atom{ID: r.ID, Kind: g.Kind, Model: g.Model, Profile: atomProfile(g), Mode: mode}
		if r.ParentID != nil {
			atoms[i].GPU = *r.ParentID
		}
	}
	return atoms
}

// tryNode is one placement attempt on one node, inside the savepoint. It
// returns why the node could not take the request, or where it landed.
// It takes two round trips: the node's lock and free atoms, then, once
// the atoms are picked, every lock and write of the booking at once. Locks
// follow the global order: nodes, devices, node_resources,
// pool_capacity_rollup (and node_desired, when it queues the assign). The
// second batch writes before its results are checked; any check that fails
// rolls the attempt back to the savepoint, which undoes the writes and
// releases the locks.
func (h *Handlers) tryNode(ctx context.Context, tx pgx.Tx, sp *savepoint, p placement, req placer.Request,
	nodeID string) (*placed, string, error) {
	g := p.spec.GPU
	var first pg.Batch
	sp.begin(&first)
	var n db.NodeLockForPlacementRow
	pg.One(&first, &n, nil, pgx.RowToStructByPos[db.NodeLockForPlacementRow], func(q *db.Queries) error {
		_, err := q.NodeLockForPlacement(ctx, nodeID)
		return err
	})
	var free []db.DeviceFreeAtomsRow
	if g.Count > 0 {
		pg.Many(&first, &free, pgx.RowToStructByPos[db.DeviceFreeAtomsRow], func(q *db.Queries) error {
			_, err := q.DeviceFreeAtoms(ctx, db.DeviceFreeAtomsParams{NodeID: nodeID, Kind: string(g.Kind),
				Model: optional(g.Model), Profile: optional(atomProfile(g)), FromTs: p.start, ToTs: p.end})
			return err
		})
	}
	if err := first.Send(ctx, tx); err != nil {
		return nil, "", pg.Translate(err, "node "+nodeID)
	}
	if why := nodeIneligible(n.Cordoned, n.NoScheduleReasons, n.State, n.Taints, p.spec.Tolerations); why != "" {
		return nil, why + " (changed concurrently)", nil
	}
	var atoms []string
	if g.Count > 0 {
		var why string
		if atoms, why = placer.Pick(req, nodeID, freeAtomsOf(free, g)); why != "" {
			return nil, why + " (changed concurrently)", nil
		}
	}

	var b pg.Batch
	var locked []db.DeviceLockForBookingRow
	var devices []db.AssignmentDevicesRow
	var modelCharged []string
	modelCharges := modelChargesOf(p, free, atoms)
	if g.Count > 0 {
		pg.Many(&b, &locked, pgx.RowToStructByPos[db.DeviceLockForBookingRow], func(q *db.Queries) error {
			_, err := q.DeviceLockForBooking(ctx, atomsAndGPUs(atoms))
			return err
		})
		if p.assign {
			pg.Many(&b, &devices, pgx.RowToStructByPos[db.AssignmentDevicesRow], func(q *db.Queries) error {
				_, err := q.AssignmentDevices(ctx, atoms)
				return err
			})
		}
		if len(modelCharges) > 0 { // rows locked already (lockQuota): no new lock
			res, amounts := sortedAmounts(modelCharges)
			pg.Many(&b, &modelCharged, pgx.RowTo[string], func(q *db.Queries) error {
				_, err := q.QuotaUsageChargeMany(ctx, db.QuotaUsageChargeManyParams{TenantID: p.tenant,
					Resources: res, Amounts: amounts})
				return err
			})
		}
	}
	allocationID := "alc_" + uuid.NewString()
	b.Exec(nil, func(q *db.Queries) error {
		return q.AllocationCreate(ctx, db.AllocationCreateParams{ID: allocationID, ReservationID: p.reservationID,
			NodeID: nodeID, DeviceIds: nonNil(atoms), Vcpu: p.spec.VCPU, Memory: p.spec.MemoryMB, Disk: p.spec.DiskGB})
	})
	booked := make([]int64, len(atoms))
	for i, id := range atoms { // device-id order, so two placers cannot wait on each other in a cycle
		b.Exec(&booked[i], func(q *db.Queries) error {
			_, err := q.DeviceBookingInsert(ctx, db.DeviceBookingInsertParams{DeviceID: id, AllocationID: allocationID,
				FromTs: p.start, ToTs: p.end})
			return err
		})
	}
	scalars, amounts := scalarAmounts(p.spec, 1)
	var nodeCharged, rolledUp []string
	if len(scalars) > 0 {
		pg.Many(&b, &nodeCharged, pgx.RowTo[string], func(q *db.Queries) error {
			_, err := q.NodeResourceChargeMany(ctx, db.NodeResourceChargeManyParams{NodeID: nodeID,
				Resources: scalars, Amounts: amounts})
			return err
		})
		pg.Many(&b, &rolledUp, pgx.RowTo[string], func(q *db.Queries) error {
			_, err := q.PoolCapacityRollupAdjustMany(ctx, db.PoolCapacityRollupAdjustManyParams{PoolID: n.PoolID,
				Resources: scalars, Deltas: amounts})
			return err
		})
	}
	var generation int64
	if p.assign { // last in the lock order: the node's generation, for the assign the caller queues
		pg.One(&b, &generation, nil, pgx.RowTo[int64], func(q *db.Queries) error {
			_, err := q.NodeDesiredBump(ctx, nodeID)
			return err
		})
	}
	if err := b.Send(ctx, tx); err != nil {
		if pg.IsExclusionViolation(err) { // the constraint, the backstop of the btree check, refused one
			return nil, "a booking on " + nodeID + " was made concurrently", nil
		}
		return nil, "", pg.Translate(err, "booking on "+nodeID)
	}

	if g.Count > 0 {
		if why := checkLockedAtoms(locked, nodeID, atoms); why != "" {
			return nil, why, nil
		}
		if missing := firstMissing(modelCharges, modelCharged); missing != "" {
			return nil, "", modelRefusal(ctx, db.New(tx), p.tenant, missing, modelCharges[missing])
		}
	}
	for i, n := range booked {
		if n == 0 {
			return nil, atoms[i] + " was booked concurrently", nil
		}
	}
	for i, r := range scalars {
		if !slices.Contains(nodeCharged, r) {
			return nil, fmt.Sprintf("not enough %s left for %d (changed concurrently)", r, amounts[i]), nil
		}
	}
	for _, r := range scalars {
		if !slices.Contains(rolledUp, r) {
			return nil, "", fmt.Errorf("pool %s capacity rollup for %s out of range: %w", n.PoolID, r, errRollupDrift)
		}
	}
	return &placed{allocationID: allocationID, nodeID: nodeID, poolID: n.PoolID, deviceIDs: atoms,
		modelCharges: modelCharges, generation: generation, devices: devices}, "", nil
}

// modelChargesOf is the tenant's gpu:<model> charges for the atoms picked:
// the devices' model, whatever the request named, for the models that have
// a quota (their rows are locked already, by lockQuota).
func modelChargesOf(p placement, free []db.DeviceFreeAtomsRow, atoms []string) map[string]int64 {
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

// scalarAmounts is the spec's non-zero scalars in core.ScalarResources
// order (the lock order within a node's counters), each times sign.
func scalarAmounts(spec core.ReservationSpec, sign int64) ([]string, []int64) {
	var res []string
	var amounts []int64
	for _, r := range core.ScalarResources {
		if a := scalar(spec, r); a != 0 {
			res, amounts = append(res, r), append(amounts, sign*a)
		}
	}
	return res, amounts
}

// sortedAmounts is charges as parallel slices in resource order.
func sortedAmounts(charges map[string]int64) ([]string, []int64) {
	res := slices.Sorted(maps.Keys(charges))
	amounts := make([]int64, len(res))
	for i, r := range res {
		amounts[i] = charges[r]
	}
	return res, amounts
}

// firstMissing is the first resource of charges, in resource order, that a
// guarded statement did not return, or "".
func firstMissing(charges map[string]int64, done []string) string {
	for _, r := range slices.Sorted(maps.Keys(charges)) {
		if !slices.Contains(done, r) {
			return r
		}
	}
	return ""
}

// adjustRollup moves the pool rollup by the spec's scalars times sign.
func adjustRollup(ctx context.Context, q *db.Queries, poolID string, spec core.ReservationSpec, sign int64) error {
	scalars, deltas := scalarAmounts(spec, sign)
	if len(scalars) == 0 {
		return nil
	}
	done, err := q.PoolCapacityRollupAdjustMany(ctx, db.PoolCapacityRollupAdjustManyParams{PoolID: poolID,
		Resources: scalars, Deltas: deltas})
	if err != nil {
		return pg.Translate(err, "pool capacity")
	}
	for _, r := range scalars {
		if !slices.Contains(done, r) {
			return fmt.Errorf("pool %s capacity rollup for %s out of range: %w", poolID, r, errRollupDrift)
		}
	}
	return nil
}

var errRollupDrift = errors.New("rollup disagrees with node counters")

// nodeIneligible says why a node may not take new bookings, or "".
func nodeIneligible(cordoned bool, reasons []string, state string, taints, tolerations []string) string {
	return placer.Ineligible(placer.Eligibility{Cordoned: cordoned, NoScheduleReasons: reasons,
		State: state, Taints: taints}, tolerations)
}

// atomProfile is the devices.profile value the request matches.
func atomProfile(g core.GPURequest) string {
	switch g.Kind {
	case core.AtomMIG:
		return g.MIGProfile
	case core.AtomSlot:
		return string(g.SlotKind)
	}
	return ""
}

func scalar(spec core.ReservationSpec, resource string) int64 {
	switch resource {
	case core.ResourceVCPU:
		return spec.VCPU
	case core.ResourceMemory:
		return spec.MemoryMB
	case core.ResourceDisk:
		return spec.DiskGB
	}
	return 0
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// bestFitOrder sorts nodes that fit into the order placer.Decide gives
// them, the order the placer tries them in (see placement_order_test.go).
func bestFitOrder(fit []db.NodePlacementCandidatesRow, reservationID string) {
	d := placer.Decide(placer.Request{Reservation: reservationID}, placementCandidatesOf(fit))
	rank := make(map[string]int, len(d.Choices))
	for i, c := range d.Choices {
		rank[c.NodeID] = i
	}
	at := func(id string) int {
		if i, ok := rank[id]; ok {
			return i
		}
		return len(rank) // not a fit after all: last
	}
	slices.SortStableFunc(fit, func(a, b db.NodePlacementCandidatesRow) int {
		return cmp.Compare(at(a.ID), at(b.ID))
	})
}

// pickAtoms is placement's choice of count atoms among a node's free ones.
var pickAtoms = placer.PickAtoms
