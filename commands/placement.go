package commands

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// placement is one reservation's request as the placer sees it.
type placement struct {
	reservationID string
	poolIDs       []string
	spec          core.ReservationSpec
	start, end    time.Time
}

// placed is where a placement landed.
type placed struct {
	allocationID string
	nodeID       string
	deviceIDs    []string
}

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
	// A sample first: in a large pool, best fit among PlacementSample
	// nodes instead of a free-atom count for every node. When nothing in
	// the sample fits, all nodes are considered, so a reservation goes
	// pending only when no node fits, with every node's reason.
	sample := int32(h.placementSample())
	cands, err := placementCandidates(ctx, q, p, &sample)
	if err != nil {
		return nil, nil, err
	}
	fit, reasons := classify(cands, p.spec)
	if len(fit) == 0 && len(cands) == int(sample) {
		if cands, err = placementCandidates(ctx, q, p, nil); err != nil {
			return nil, nil, err
		}
		fit, reasons = classify(cands, p.spec)
	}
	if len(cands) == 0 {
		reasons = append(reasons, "the pool has no nodes")
	}
	bestFitOrder(fit, p.reservationID)
	for i, c := range fit {
		if i == h.placementAttempts() {
			reasons = append(reasons, fmt.Sprintf("%d more nodes not tried after %d conflicts", len(fit)-i, i))
			break
		}
		sp, err := tx.Begin(ctx) // SAVEPOINT
		if err != nil {
			return nil, nil, db.Translate(err, "placement savepoint")
		}
		res, why, err := h.tryNode(ctx, sp, p, c.ID)
		if err != nil && !db.IsRetryable(err) {
			_ = sp.Rollback(ctx)
			return nil, nil, err
		}
		if err != nil || why != "" {
			if err != nil {
				why = "lost a race with a concurrent change (" + err.Error() + ")"
			}
			if rbErr := sp.Rollback(ctx); rbErr != nil { // ROLLBACK TO SAVEPOINT
				return nil, nil, db.Translate(rbErr, "placement savepoint")
			}
			reasons = append(reasons, c.ID+": "+why)
			continue
		}
		if err := sp.Commit(ctx); err != nil { // RELEASE SAVEPOINT
			return nil, nil, db.Translate(err, "placement savepoint")
		}
		return res, nil, nil
	}
	if len(reasons) > maxReasons {
		reasons = append(reasons[:maxReasons], fmt.Sprintf("and %d more nodes", len(reasons)-maxReasons))
	}
	return nil, reasons, nil
}

// placementCandidates reads the nodes of p's pools with their free
// capacity: maxNodes of them in an order hashed from the reservation, or
// all when maxNodes is nil.
func placementCandidates(ctx context.Context, q *db.Queries, p placement, maxNodes *int32) ([]db.NodePlacementCandidatesRow, error) {
	g := p.spec.GPU
	cands, err := q.NodePlacementCandidates(ctx, db.NodePlacementCandidatesParams{
		Kind: string(g.Kind), Model: optional(g.Model), Profile: optional(atomProfile(g)),
		FromTs: p.start, ToTs: p.end, PoolIds: p.poolIDs, Seed: p.reservationID, MaxNodes: maxNodes,
	})
	if err != nil {
		return nil, db.Translate(err, "placement candidates")
	}
	return cands, nil
}

// classify splits candidates into the nodes that fit the request and the
// reasons, node by node, why the others do not.
func classify(cands []db.NodePlacementCandidatesRow, spec core.ReservationSpec) (fit []db.NodePlacementCandidatesRow, reasons []string) {
	for _, c := range cands {
		if why := nodeIneligible(c.Cordoned, c.NoScheduleReasons, c.State, c.Taints, spec.Tolerations); why != "" {
			reasons = append(reasons, c.ID+": "+why)
		} else if why := lacks(c, spec); why != "" {
			reasons = append(reasons, c.ID+": "+why)
		} else {
			fit = append(fit, c)
		}
	}
	return fit, reasons
}

// tryNode is one placement attempt on one node, inside a savepoint. It
// returns why the node could not take the request, or where it landed.
// Locks follow the global order: nodes, devices, node_resources,
// pool_capacity_rollup.
func (h *Handlers) tryNode(ctx context.Context, tx pgx.Tx, p placement, nodeID string) (*placed, string, error) {
	q := db.New(tx)
	n, err := q.NodeLockForPlacement(ctx, nodeID)
	if err != nil {
		return nil, "", db.Translate(err, "node "+nodeID)
	}
	if why := nodeIneligible(n.Cordoned, n.NoScheduleReasons, n.State, n.Taints, p.spec.Tolerations); why != "" {
		return nil, why + " (changed concurrently)", nil
	}
	g := p.spec.GPU
	var atoms []string
	if g.Count > 0 {
		free, err := q.DeviceFreeAtoms(ctx, db.DeviceFreeAtomsParams{NodeID: nodeID, Kind: string(g.Kind),
			Model: optional(g.Model), Profile: optional(atomProfile(g)), FromTs: p.start, ToTs: p.end})
		if err != nil {
			return nil, "", db.Translate(err, "free atoms")
		}
		if len(free) < g.Count {
			return nil, fmt.Sprintf("only %d free %s in the window, needs %d (changed concurrently)", len(free), describeGPU(g), g.Count), nil
		}
		ids := make([]string, len(free))
		for i, a := range free {
			ids[i] = a.ID
		}
		atoms = pickAtoms(ids, g.Count, p.reservationID, nodeID)
		if why, err := lockAtoms(ctx, q, nodeID, atoms); err != nil || why != "" {
			return nil, why, err
		}
	}
	allocationID := "alc_" + uuid.NewString()
	if err := q.AllocationCreate(ctx, db.AllocationCreateParams{ID: allocationID, ReservationID: p.reservationID,
		NodeID: nodeID, DeviceIds: nonNil(atoms), Vcpu: p.spec.VCPU, Memory: p.spec.MemoryMB, Disk: p.spec.DiskGB}); err != nil {
		return nil, "", db.Translate(err, "allocation")
	}
	for _, id := range atoms { // device-id order, so two placers cannot wait on each other in a cycle
		n, err := q.DeviceBookingInsert(ctx, db.DeviceBookingInsertParams{DeviceID: id, AllocationID: allocationID,
			FromTs: p.start, ToTs: p.end})
		if err != nil {
			return nil, "", db.Translate(err, "booking of "+id)
		}
		if n == 0 {
			return nil, id + " was booked concurrently", nil
		}
	}
	if why, err := chargeNode(ctx, q, nodeID, n.PoolID, p.spec); err != nil || why != "" {
		return nil, why, err
	}
	return &placed{allocationID: allocationID, nodeID: nodeID, deviceIDs: atoms}, "", nil
}

// lockAtoms locks the chosen atoms and their GPUs FOR SHARE, in id order,
// and checks them as of the lock (rule 4 for devices).
func lockAtoms(ctx context.Context, q *db.Queries, nodeID string, atoms []string) (string, error) {
	ids := slices.Clone(atoms)
	for _, a := range atoms {
		if i := strings.IndexByte(a, '/'); i > 0 {
			ids = append(ids, a[:i])
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	rows, err := q.DeviceLockShare(ctx, ids)
	if err != nil {
		return "", db.Translate(err, "devices")
	}
	byID := make(map[string]db.DeviceLockShareRow, len(rows))
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
			return "", db.Translate(err, "node "+r)
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
			return db.Translate(err, "pool capacity")
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
	switch {
	case cordoned:
		return "cordoned"
	case len(reasons) > 0:
		return "not schedulable (" + strings.Join(reasons, ", ") + ")"
	case state == "lost" || state == "retired":
		return "node is " + state
	}
	for _, t := range taints {
		if !slices.Contains(tolerations, t) {
			return "has taint " + t + " that the reservation does not tolerate"
		}
	}
	return ""
}

// lacks says which part of the request an eligible node cannot hold, or "".
func lacks(c db.NodePlacementCandidatesRow, spec core.ReservationSpec) string {
	var out []string
	if spec.GPU.Count > 0 && c.FreeAtoms < int64(spec.GPU.Count) {
		out = append(out, fmt.Sprintf("%d free %s in the window, needs %d", c.FreeAtoms, describeGPU(spec.GPU), spec.GPU.Count))
	}
	for _, r := range []struct {
		name       string
		free, need int64
	}{{"vCPU", c.FreeVcpu, spec.VCPU}, {"MB memory", c.FreeMemory, spec.MemoryMB}, {"GB disk", c.FreeDisk, spec.DiskGB}} {
		if r.need > r.free {
			out = append(out, fmt.Sprintf("%d %s free, needs %d", r.free, r.name, r.need))
		}
	}
	return strings.Join(out, "; ")
}

func describeGPU(g core.GPURequest) string {
	switch g.Kind {
	case core.AtomMIG:
		return "MIG " + g.MIGProfile + " instances"
	case core.AtomSlot:
		return string(g.SlotKind) + " slots"
	}
	if g.Model != "" {
		return g.Model + " GPUs"
	}
	return "whole GPUs"
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

// tieBreak orders equally good nodes for one reservation: a hash of the
// reservation and node ids, different for each reservation.
func tieBreak(reservationID, nodeID string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(reservationID))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(nodeID))
	return h.Sum64()
}

// bestFitOrder sorts the nodes that fit in the order the placer tries them.
// Best fit: the node with the fewest free matching atoms that still fits,
// so that large holes stay free for large requests. Ties (every node of an
// idle pool) are broken by a hash of the reservation and the node, so that
// concurrent placers start on different nodes instead of all racing for
// the lowest id, while one reservation's order stays the same across its
// retries.
func bestFitOrder(fit []db.NodePlacementCandidatesRow, reservationID string) {
	slices.SortStableFunc(fit, func(a, b db.NodePlacementCandidatesRow) int {
		if a.FreeAtoms != b.FreeAtoms {
			return cmp.Compare(a.FreeAtoms, b.FreeAtoms)
		}
		if c := cmp.Compare(tieBreak(reservationID, a.ID), tieBreak(reservationID, b.ID)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// pickAtoms chooses count of a node's free atoms (given in id order): a run
// of neighbours starting at an offset that depends on the reservation. With
// the first free atoms every time, concurrent placers on one node all
// queued on the same atom's booking and all but one lost the node; with
// an offset they mostly take different atoms, while a multi-atom request
// still takes neighbours (slots of one GPU). The result is in id order,
// the order bookings are inserted and devices locked in.
func pickAtoms(free []string, count int, reservationID, nodeID string) []string {
	start := int(tieBreak(reservationID, nodeID) % uint64(len(free)))
	picked := make([]string, 0, count)
	for i := range count {
		picked = append(picked, free[(start+i)%len(free)])
	}
	slices.Sort(picked)
	return picked
}
