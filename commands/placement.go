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
}

// placed is where a placement landed.
type placed struct {
	allocationID string
	nodeID       string
	deviceIDs    []string
	// modelCharges is the per-model quota charged: gpu:<model> → atoms.
	modelCharges map[string]int64
}

// modelQuotaRefusal is an attempt refused because the tenant's quota for
// the model of the node's atoms is used up: not a lost race, so it does not
// count towards the attempts; the placer tries the next node.
type modelQuotaRefusal struct{ msg string }

func (e *modelQuotaRefusal) Error() string { return e.msg }

// maxReasons bounds the node-by-node explanation kept on a pending
// reservation, so that a large pool does not make a huge condition.
const maxReasons = 20

// place tries to place p on one node of its pools. Each attempt runs under a
// savepoint (a pgx nested transaction): a node, atom or counter conflict, or
// a deadlock or serialization failure, rolls back to it and the placer
// replans without that node, at most PlacementAttempts times. It returns nil
// and the reasons, node by node, when nothing fit; an error only for a
// failure that is not a lost race.
func (h *Handlers) place(ctx context.Context, tx pgx.Tx, p placement) (*placed, []string, error) {
	q := db.New(tx)
	req := placementRequest(p)
	// A sample first: in a large pool, best fit among PlacementSample
	// nodes instead of a free-atom count for every node. When nothing in
	// the sample fits, all nodes are considered, so a reservation goes
	// pending only when no node fits, with every node's reason.
	sample := int32(h.placementSample())
	cands, err := placementCandidates(ctx, q, p, &sample)
	if err != nil {
		return nil, nil, err
	}
	d := placer.Decide(req, cands)
	if len(d.Choices) == 0 && len(cands) == int(sample) {
		if cands, err = placementCandidates(ctx, q, p, nil); err != nil {
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
	for i, c := range d.Choices {
		if conflicts == h.placementAttempts() {
			if h.ReplanCapReached != nil {
				h.ReplanCapReached()
			}
			reasons = append(reasons, fmt.Sprintf("%d more nodes not tried after %d conflicts", len(d.Choices)-i, conflicts))
			break
		}
		sp, err := tx.Begin(ctx) // SAVEPOINT
		if err != nil {
			return nil, nil, pg.Translate(err, "placement savepoint")
		}
		res, why, err := h.tryNode(ctx, sp, p, req, c.NodeID)
		var refusal *modelQuotaRefusal
		if errors.As(err, &refusal) {
			if rbErr := sp.Rollback(ctx); rbErr != nil { // ROLLBACK TO SAVEPOINT
				return nil, nil, pg.Translate(rbErr, "placement savepoint")
			}
			quotaRefused = append(quotaRefused, refusal.msg)
			reasons = append(reasons, c.NodeID+": "+refusal.msg)
			continue
		}
		if err != nil && !pg.IsRetryable(err) {
			_ = sp.Rollback(ctx)
			return nil, nil, err
		}
		if err != nil || why != "" {
			if err != nil {
				why = "lost a race with a concurrent change (" + err.Error() + ")"
			}
			if rbErr := sp.Rollback(ctx); rbErr != nil { // ROLLBACK TO SAVEPOINT
				return nil, nil, pg.Translate(rbErr, "placement savepoint")
			}
			reasons = append(reasons, c.NodeID+": "+why)
			conflicts++
			continue
		}
		if err := sp.Commit(ctx); err != nil { // RELEASE SAVEPOINT
			return nil, nil, pg.Translate(err, "placement savepoint")
		}
		return res, nil, nil
	}
	if p.quotaFinal && len(quotaRefused) > 0 && len(quotaRefused) == len(d.Choices) {
		return nil, nil, core.Errorf(core.CodeQuotaExceeded, "%s", quotaRefused[0])
	}
	if len(reasons) > maxReasons {
		reasons = append(reasons[:maxReasons], fmt.Sprintf("and %d more nodes", len(reasons)-maxReasons))
	}
	return nil, reasons, nil
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
	g := p.spec.GPU
	rows, err := q.NodePlacementCandidates(ctx, db.NodePlacementCandidatesParams{
		Kind: string(g.Kind), Model: optional(g.Model), Profile: optional(atomProfile(g)),
		FromTs: p.start, ToTs: p.end, PoolIds: p.poolIDs, Seed: p.reservationID, MaxNodes: maxNodes,
	})
	if err != nil {
		return nil, pg.Translate(err, "placement candidates")
	}
	return placementCandidatesOf(rows), nil
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

// tryNode is one placement attempt on one node, inside a savepoint. It
// returns why the node could not take the request, or where it landed.
// Locks follow the global order: nodes, devices, node_resources,
// pool_capacity_rollup.
func (h *Handlers) tryNode(ctx context.Context, tx pgx.Tx, p placement, req placer.Request, nodeID string) (*placed, string, error) {
	q := db.New(tx)
	n, err := q.NodeLockForPlacement(ctx, nodeID)
	if err != nil {
		return nil, "", pg.Translate(err, "node "+nodeID)
	}
	if why := nodeIneligible(n.Cordoned, n.NoScheduleReasons, n.State, n.Taints, p.spec.Tolerations); why != "" {
		return nil, why + " (changed concurrently)", nil
	}
	g := p.spec.GPU
	var atoms []string
	var modelCharges map[string]int64
	if g.Count > 0 {
		free, err := q.DeviceFreeAtoms(ctx, db.DeviceFreeAtomsParams{NodeID: nodeID, Kind: string(g.Kind),
			Model: optional(g.Model), Profile: optional(atomProfile(g)), FromTs: p.start, ToTs: p.end})
		if err != nil {
			return nil, "", pg.Translate(err, "free atoms")
		}
		var why string
		if atoms, why = placer.Pick(req, nodeID, freeAtomsOf(free, g)); why != "" {
			return nil, why + " (changed concurrently)", nil
		}
		if why, err := lockAtoms(ctx, q, nodeID, atoms); err != nil || why != "" {
			return nil, why, err
		}
		if modelCharges, err = chargeModelQuota(ctx, q, p, free, atoms); err != nil {
			return nil, "", err
		}
	}
	allocationID := "alc_" + uuid.NewString()
	if err := q.AllocationCreate(ctx, db.AllocationCreateParams{ID: allocationID, ReservationID: p.reservationID,
		NodeID: nodeID, DeviceIds: nonNil(atoms), Vcpu: p.spec.VCPU, Memory: p.spec.MemoryMB, Disk: p.spec.DiskGB}); err != nil {
		return nil, "", pg.Translate(err, "allocation")
	}
	for _, id := range atoms { // device-id order, so two placers cannot wait on each other in a cycle
		n, err := q.DeviceBookingInsert(ctx, db.DeviceBookingInsertParams{DeviceID: id, AllocationID: allocationID,
			FromTs: p.start, ToTs: p.end})
		if pg.IsExclusionViolation(err) {
			n, err = 0, nil
		}
		if err != nil {
			return nil, "", pg.Translate(err, "booking of "+id)
		}
		if n == 0 {
			return nil, id + " was booked concurrently", nil
		}
	}
	if why, err := chargeNode(ctx, q, nodeID, n.PoolID, p.spec); err != nil || why != "" {
		return nil, why, err
	}
	return &placed{allocationID: allocationID, nodeID: nodeID, deviceIDs: atoms, modelCharges: modelCharges}, "", nil
}

// chargeModelQuota charges the tenant's gpu:<model> quota for the models of
// the atoms picked (the devices' model, whatever the request named), for
// the models that have a quota; their rows are already locked (lockQuota),
// so this keeps the lock order. A quota used up is a modelQuotaRefusal.
func chargeModelQuota(ctx context.Context, q *db.Queries, p placement, free []db.DeviceFreeAtomsRow, atoms []string) (map[string]int64, error) {
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
	for _, res := range slices.Sorted(maps.Keys(charges)) {
		n, err := q.QuotaUsageCharge(ctx, db.QuotaUsageChargeParams{TenantID: p.tenant, Resource: res, Amount: charges[res]})
		if err != nil {
			return nil, pg.Translate(err, "quota "+res)
		}
		if n == 0 {
			cur, err := q.QuotaUsageGet(ctx, db.QuotaUsageGetParams{TenantID: p.tenant, Resource: res})
			if err != nil {
				return nil, pg.Translate(err, "quota "+res)
			}
			return nil, &modelQuotaRefusal{msg: fmt.Sprintf("quota for %s exceeded: %d used of %d, this needs %d more",
				res, cur.Used, cur.Max, charges[res])}
		}
	}
	return charges, nil
}

// lockAtoms locks the chosen atoms and their GPUs FOR NO KEY UPDATE, in id
// order, and checks them as of the lock (rule 4 for devices). The lock is
// exclusive among bookers so that DeviceBookingInsert's btree check sees
// every booking of the device committed before it: the exclusion
// constraint's GiST index can lose entries (see migration 0027).
func lockAtoms(ctx context.Context, q *db.Queries, nodeID string, atoms []string) (string, error) {
	ids := slices.Clone(atoms)
	for _, a := range atoms {
		if i := strings.IndexByte(a, '/'); i > 0 {
			ids = append(ids, a[:i])
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	rows, err := q.DeviceLockForBooking(ctx, ids)
	if err != nil {
		return "", pg.Translate(err, "devices")
	}
	byID := make(map[string]db.DeviceLockForBookingRow, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	for _, id := range ids {
		d, ok := byID[id]
		switch {
		case !ok:
			return id + " no longer exists", nil
		case d.NodeID != nodeID:
			return id + " is on another node", nil
		case d.Quarantined:
			return id + " was quarantined", nil
		case d.Health != HealthHealthy:
			return id + " is unhealthy", nil
		case slices.Contains(atoms, id) && (!d.Bookable || d.Retired):
			return id + " is no longer bookable (its GPU changed mode)", nil
		}
	}
	return "", nil
}

// chargeNode applies the guarded counter updates (rule 3) and the pool
// rollup, in lock order. Zero rows means another placement took the room.
func chargeNode(ctx context.Context, q *db.Queries, nodeID, poolID string, spec core.ReservationSpec) (string, error) {
	for _, r := range core.ScalarResources {
		amount := scalar(spec, r)
		if amount == 0 {
			continue
		}
		n, err := q.NodeResourceCharge(ctx, db.NodeResourceChargeParams{NodeID: nodeID, Resource: r, Amount: amount})
		if err != nil {
			return "", pg.Translate(err, "node "+r)
		}
		if n == 0 {
			return fmt.Sprintf("not enough %s left for %d (changed concurrently)", r, amount), nil
		}
	}
	return "", adjustRollup(ctx, q, poolID, spec, 1)
}

// adjustRollup moves the pool rollup by the spec's scalars times sign.
func adjustRollup(ctx context.Context, q *db.Queries, poolID string, spec core.ReservationSpec, sign int64) error {
	for _, r := range core.ScalarResources {
		amount := scalar(spec, r)
		if amount == 0 {
			continue
		}
		n, err := q.PoolCapacityRollupAdjust(ctx, db.PoolCapacityRollupAdjustParams{PoolID: poolID, Resource: r, Delta: sign * amount})
		if err != nil {
			return pg.Translate(err, "pool capacity")
		}
		if n == 0 {
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
