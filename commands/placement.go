package commands

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/placement"
)

// reservationToPlace is one reservation's request as the placer sees it.
// The decision (which nodes fit, in which order, which atoms) is package
// placement's; this file loads its candidates and books its choices.
type reservationToPlace struct {
	reservationID string
	// The scope: a pool, or every pool of a site (one of the two is set).
	poolID, siteID string
	spec           core.ReservationSpec
	start, end     time.Time
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
	// network is the pool's workload network mode, for the assign.
	network   string
	deviceIDs []string
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
// once (released after a success, so that the transaction may place
// again). It returns nil and the reasons, node by node, when nothing fit; an
// error only for a failure that is not a lost race.
func (h *Handlers) place(ctx context.Context, tx pgx.Tx, p reservationToPlace) (*placed, []string, error) {
	sample := int32(h.placementSample())
	cands, err := placementCandidates(ctx, tx, p, &sample)
	if err != nil {
		return nil, nil, err
	}
	var tail pg.Batch
	where, reasons, err := h.placeWith(ctx, tx, p, cands, nil, int(sample), &tail)
	if err != nil {
		return nil, nil, err
	}
	if where != nil {
		tail.Statement("RELEASE SAVEPOINT " + savepointName)
	}
	if err := tail.Send(ctx, tx); err != nil {
		return nil, nil, pg.Translate(err, "placement savepoint")
	}
	return where, reasons, nil
}

// placeWith places p given the candidates of a sample of at most sample
// nodes (see below) and, when the candidates query listed them, their free
// atoms: the first attempt books from that list (tryNode). Each attempt
// runs under a savepoint: a node, atom or counter conflict, or a deadlock
// or serialization failure, rolls back to it and the placer replans
// without that node, at most PlacementAttempts times.
// After a failed last attempt, the rollback to the savepoint is queued in
// tail, for the caller to send with its next statements: it must send tail
// before anything else in the transaction. After a success the savepoint
// stays open, its writes in it: the caller's COMMIT takes them with the
// rest (a caller that goes on to place again releases it first: place).
func (h *Handlers) placeWith(ctx context.Context, tx pgx.Tx, p reservationToPlace, cands []placement.Candidate,
	listed map[string]listedAtoms, sample int, tail *pg.Batch) (*placed, []string, error) {
	req := placementRequest(p)
	// A sample first: in a large pool, best fit among PlacementSample
	// nodes instead of a free-atom count for every node. When nothing in
	// the sample fits, all nodes are considered, so a reservation goes
	// pending only when no node fits, with every node's reason.
	d := placement.Decide(req, cands)
	if len(d.Choices) == 0 && len(cands) == sample {
		var err error
		if cands, err = placementCandidates(ctx, tx, p, nil); err != nil {
			return nil, nil, err
		}
		d = placement.Decide(req, cands)
	}
	var reasons []string
	for _, r := range d.Rejected {
		reasons = append(reasons, r.NodeID+": "+r.Reason)
		if h.cfg.PlacementRejected != nil {
			h.cfg.PlacementRejected(string(r.Filter))
		}
	}
	if len(cands) == 0 {
		reasons = append(reasons, "the pool has no nodes")
	}
	conflicts := 0
	var quotaRefused []string
	var sp savepoint
	for i, c := range d.Choices {
		if conflicts == h.placementAttempts() {
			if h.cfg.Test.ReplanCapReached != nil {
				h.cfg.Test.ReplanCapReached()
			}
			reasons = append(reasons, fmt.Sprintf("%d more nodes not tried after %d conflicts", len(d.Choices)-i, conflicts))
			break
		}
		var atoms *listedAtoms
		if l, ok := listed[c.NodeID]; ok && i == 0 {
			// Only the first: a replan after a conflict reads the atoms
			// again, under the lock, so that a hot spot does not lose
			// more races to its own stale list.
			atoms = &l
		}
		res, why, err := h.tryNode(ctx, tx, &sp, p, req, c.NodeID, atoms)
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
				if rerr := sp.rollBackNow(ctx, tx); rerr != nil {
					return nil, nil, rerr
				}
				why = "lost a race with a concurrent change (" + err.Error() + ")"
			}
			sp.dirty = true
			reasons = append(reasons, c.NodeID+": "+why)
			conflicts++
			continue
		}
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

// placementRequest is p as placement.Decide takes it.
func placementRequest(p reservationToPlace) placement.Request {
	g := p.spec.GPU
	return placement.Request{Reservation: p.reservationID, GPUs: g.Count, Kind: g.Kind, Model: g.Model,
		MIGProfile: g.MIGProfile, SlotKind: g.SlotKind, VCPU: p.spec.VCPU, MemoryMB: p.spec.MemoryMB,
		DiskGB: p.spec.DiskGB, Tolerations: p.spec.Tolerations}
}

// placementCandidates reads the nodes of p's pool or site with their free
// capacity: maxNodes of them from a point hashed from the reservation, or
// all when maxNodes is nil. It plans the rest of tx's booking lookups
// (planBookingLookups), in the same round trip.
func placementCandidates(ctx context.Context, tx pgx.Tx, p reservationToPlace, maxNodes *int32) ([]placement.Candidate, error) {
	var b pg.Batch
	planBookingLookups(&b)
	var rows []db.NodePlacementCandidatesRow
	pg.Many(ctx, &b, (*db.Queries).NodePlacementCandidates, candidatesParams(p, maxNodes, false), &rows)
	if err := b.Send(ctx, tx); err != nil {
		return nil, pg.Translate(err, "placement candidates")
	}
	return placementCandidatesOf(rows), nil
}

// planBookingLookups queues in b what every transaction that places sends
// before its first placement statement: sequential and bitmap scans off,
// until the transaction ends. The candidates' and the placement's lookups
// of device bookings must be plain index scans of
// device_bookings_device_end. Planned on a table that holds few live
// bookings, a connection's cached generic plan scans device_bookings whole
// for every device instead, and keeps doing so as the table grows and
// released bookings leave dead rows behind: 0.22 ms per candidates query
// became 0.7–1.3 ms for the rest of a benchmark run (docs/benchmarks/history.md,
// fourth pass). A bitmap scan of the index, which the planner picks for a
// lookup it expects to find one row, never marks the entries of deleted
// bookings dead, so each lookup of a busy device reads all of them again:
// the candidates query took 1.4 ms instead of 0.35 on the benchmark's hot
// spot (sixth pass). A plan is cached per connection and statement,
// whichever path planned it, so every path that places sets it, not the
// create alone. The statements that follow in such a transaction are keyed
// lookups, locks and inserts, which an index scan serves as well.
func planBookingLookups(b *pg.Batch) {
	b.Statement("SET LOCAL enable_seqscan = off")
	b.Statement("SET LOCAL enable_bitmapscan = off")
}

// planBookingLookupsNow sends planBookingLookups' setting in a round trip
// of its own, for the transactions that look bookings up outside a
// placement batch (a preemption's placement, an extension, a GPU's mode
// change): none of them is frequent.
func planBookingLookupsNow(ctx context.Context, tx pgx.Tx) error {
	var b pg.Batch
	planBookingLookups(&b)
	return pg.Translate(b.Send(ctx, tx), "booking lookups")
}

// candidatesParams is NodePlacementCandidates' arguments for p; listAtoms
// asks for each node's free atoms as well as their count.
func candidatesParams(p reservationToPlace, maxNodes *int32, listAtoms bool) db.NodePlacementCandidatesParams {
	g := p.spec.GPU
	if p.siteID != "" {
		p.poolID = "" // the query would read the pool's nodes twice
	}
	return db.NodePlacementCandidatesParams{
		Kind: string(g.Kind), Model: optional(g.Model), Profile: optional(atomProfile(g)),
		FromTs: p.start, ToTs: p.end, PoolID: optional(p.poolID), SiteID: optional(p.siteID), Seed: p.reservationID,
		MaxNodes: maxNodes, WithAtoms: g.Count > 0, ListAtoms: listAtoms && g.Count > 0,
		WithVcpu: p.spec.VCPU > 0, WithMemory: p.spec.MemoryMB > 0, WithDisk: p.spec.DiskGB > 0,
	}
}

// placementCandidatesOf is the adapter from the candidates query to
// placement: the query counted each node's free matching atoms (and may
// have listed them: listedAtomsOf).
func placementCandidatesOf(rows []db.NodePlacementCandidatesRow) []placement.Candidate {
	cands := make([]placement.Candidate, len(rows))
	for i, r := range rows {
		cands[i] = placement.Candidate{NodeID: r.ID,
			Eligibility: placement.Eligibility{Cordoned: r.Cordoned, NoScheduleReasons: r.NoScheduleReasons,
				State: r.State, Taints: r.Taints},
			FreeAtoms: r.FreeAtoms, FreeVCPU: r.FreeVcpu, FreeMemoryMB: r.FreeMemory, FreeDiskGB: r.FreeDisk}
	}
	return cands
}

// listedAtoms is a node's free atoms as the candidates query listed them,
// before any lock, and the node's pool: what a create's first attempt books
// from, without reading them again under the node's lock (tryNode). Every
// rule is still checked as of the locks, on the booking's results. The
// atoms' model, which the booking charges the tenant's quota for, is not:
// a device's model never changes (DeviceUpsertAtom keeps it), which is
// also what the read under the lock, DeviceFreeAtoms, relies on.
type listedAtoms struct {
	poolID string
	free   []db.DeviceFreeAtomsRow
}

// listedAtomsOf is the listed free atoms of the candidates, by node, in
// DeviceFreeAtoms' form (not yet in its id order: tryNode sorts the one it
// tries): for every node when g asks for no atoms (there is nothing to
// list), else for the nodes whose free atoms share one model (the model's
// quota is charged with the booking, before the lock; the others are read
// under the lock).
func listedAtomsOf(rows []db.NodePlacementCandidatesRow, g core.GPURequest) map[string]listedAtoms {
	listed := make(map[string]listedAtoms, len(rows))
	for _, r := range rows {
		if g.Count > 0 && (r.FreeAtomModel == "" || len(r.FreeAtomIds) != len(r.FreeAtomParents)) {
			continue
		}
		free := make([]db.DeviceFreeAtomsRow, len(r.FreeAtomIds))
		for i, id := range r.FreeAtomIds {
			free[i] = db.DeviceFreeAtomsRow{ID: id, Model: r.FreeAtomModel}
			if parent := r.FreeAtomParents[i]; parent != "" {
				free[i].ParentID = &parent
			}
		}
		listed[r.ID] = listedAtoms{poolID: r.PoolID, free: free}
	}
	return listed
}

// freeAtomsOf is the adapter from DeviceFreeAtoms, which returns only the
// free atoms that match g and are bookable (devices.bookable, the atom rule),
// healthy and not quarantined, nor their GPU: each is such an atom, its GPU
// in the mode that exposes it.
func freeAtomsOf(rows []db.DeviceFreeAtomsRow, g core.GPURequest) []placement.Atom {
	mode := core.GPUExclusive
	switch g.Kind {
	case core.AtomMIG:
		mode = core.GPUMIG
	case core.AtomSlot:
		mode = g.SlotKind
	}
	atoms := make([]placement.Atom, len(rows))
	for i, r := range rows {
		atoms[i] = placement.Atom{ID: r.ID, Kind: g.Kind, Model: g.Model, Profile: atomProfile(g), Mode: mode}
		if r.ParentID != nil {
			atoms[i].GPU = *r.ParentID
		}
	}
	return atoms
}

// nodeIneligible says why a node may not take new bookings, or "".
func nodeIneligible(cordoned bool, reasons []string, state string, taints, tolerations []string) string {
	return placement.Ineligible(placement.Eligibility{Cordoned: cordoned, NoScheduleReasons: reasons,
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

// bestFitOrder sorts nodes that fit into the order placement.Decide gives
// them, the order the placer tries them in (see placement_order_test.go).
func bestFitOrder(fit []db.NodePlacementCandidatesRow, reservationID string) {
	d := placement.Decide(placement.Request{Reservation: reservationID}, placementCandidatesOf(fit))
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
var pickAtoms = placement.PickAtoms
