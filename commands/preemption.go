// Preemption: a reservation that cannot be placed may displace booked or
// active reservations of a strictly lower priority whose class is
// preemptible (docs/concepts/priority.md#preemption).
//
// It takes two transactions. The placing one (a create, or the pending
// retry) finds no node and rolls back (errMayPreempt) when the class may
// preempt at all. A plan is then read without locks: the victims, the
// bookings on the matching atoms and the nodes' free capacity, and
// placement.PlanPreemption picks one node and the fewest victims there.
// The placing transaction runs again with the plan, in the global lock
// order: every quota row of the preemptor's and the victims' tenants first
// (tenant, resource), then the node, all its devices, its counters and its
// pool's rollup (NodeResourceLockForPreemption says why), then each victim
// ends as a release does (refund, version-guarded transition to preempted,
// capacity freed, unassign queued with the class's grace), and the
// preemptor is placed on the node. Any check that fails under the locks (a
// victim changed, the freed atoms were taken) rolls the whole transaction
// back and the plan is read again, at most PlacementAttempts times; then
// the reservation is placed, or left pending, without preemption.
//
// The preemptor's assign is queued after its victims' unassigns, and node
// dispatch holds an assign queued behind an open unassign until the daemon
// concluded it, which it does once the victim's workloads are gone: the
// preemptor's workloads never share a device with its victim's.
//
// A preemptor whose window starts later than its victims' grace from now
// needs their atoms only from its start. When it fits by taking them from
// then alone (their vCPU, memory and disk, which are held until the end
// and not by the window, left to them), its victims are cut back instead:
// each keeps its devices, its end moves to the preemptor's start
// (reservation.shortened) and it expires there as any reservation does
// (cutBack).

package commands

import (
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

// errMayPreempt rolls back a placing transaction that found no node while
// its class may preempt: the plan is read, and it runs again with it.
var errMayPreempt = errors.New("no node fits: look for reservations to preempt")

// errPreemptionLost rolls back a preempting transaction whose plan no
// longer holds under its locks (a victim changed, or the freed atoms were
// booked first): the plan is read again.
var errPreemptionLost = errors.New("the preemption plan changed concurrently")

// preemptionPlan is what a preempting transaction carries out.
type preemptionPlan struct {
	// Preemption is the node, its victims and the node as placement sees
	// it once they are gone (Node: the preemptor's one candidate).
	placement.Preemption
	// victims are the displaced reservations as read, in id order.
	victims []db.PreemptionVictimsRow
	// tenants are the victims' tenants and the preemptor's, sorted, once
	// each: whose quota rows the transaction locks first.
	tenants []string
	// cutBackTo, when set, is the preemptor's start: the victims are cut
	// back to end there (cutBack) instead of ending now.
	cutBackTo *time.Time
}

// preemptor is the reservation that displaces others.
type preemptor struct {
	id       string
	class    string
	priority int32
}

// planPreemption reads, without locks, what p could displace at the
// given priority and plans it; nil when nothing would make it fit.
func (h *Handlers) planPreemption(ctx context.Context, p reservationToPlace, priority int32) (*preemptionPlan, error) {
	q := db.New(h.Pool)
	scope := db.PreemptionVictimsParams{PoolID: optional(p.poolID), SiteID: optional(p.siteID), Priority: priority}
	if p.siteID != "" {
		scope.PoolID = nil
	}
	rows, err := q.PreemptionVictims(ctx, scope)
	if err != nil || len(rows) == 0 {
		return nil, pg.Translate(err, "preemption victims")
	}
	g := p.spec.GPU
	var blockers []db.PreemptionBlockersRow
	if g.Count > 0 {
		blockers, err = q.PreemptionBlockers(ctx, db.PreemptionBlockersParams{PoolID: scope.PoolID, SiteID: scope.SiteID,
			FromTs: p.start, ToTs: p.end, Kind: string(g.Kind), Model: optional(g.Model), Profile: optional(atomProfile(g))})
		if err != nil {
			return nil, pg.Translate(err, "preemption blockers")
		}
	}
	// In a transaction of its own, for the setting placementCandidates
	// sends with it.
	var cands []placement.Candidate
	err = pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		var err error
		cands, err = placementCandidates(ctx, tx, p, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	byID := make(map[string]db.PreemptionVictimsRow, len(rows))
	for _, r := range rows {
		byID[r.ReservationID] = r
	}
	// First as a cut back, when the preemptor's start leaves room for one:
	// only victims that began before it and whose grace ends before it,
	// their scalars not freed.
	var cutBackTo *time.Time
	pre, ok := placement.PlanPreemption(placementRequest(p), preemptionCandidates(cands, rows, blockers,
		func(r db.PreemptionVictimsRow) (placement.Victim, bool) {
			return placement.Victim{Reservation: r.ReservationID, Priority: r.Priority,
				Remaining: time.Duration(r.RemainingMs) * time.Millisecond}, deferrable(r, p.start)
		}))
	if ok && len(pre.Victims) > 0 {
		cutBackTo = &p.start
	} else {
		pre, ok = placement.PlanPreemption(placementRequest(p), preemptionCandidates(cands, rows, blockers,
			func(r db.PreemptionVictimsRow) (placement.Victim, bool) {
				return placement.Victim{Reservation: r.ReservationID, Priority: r.Priority,
					Remaining: time.Duration(r.RemainingMs) * time.Millisecond, VCPU: r.Vcpu, MemoryMB: r.Memory, DiskGB: r.Disk}, true
			}))
		if !ok {
			return nil, nil
		}
	}
	plan := &preemptionPlan{Preemption: pre, tenants: []string{p.tenant}, cutBackTo: cutBackTo}
	for _, v := range pre.Victims {
		r := byID[v.Reservation]
		plan.victims = append(plan.victims, r)
		plan.tenants = append(plan.tenants, r.TenantID)
	}
	slices.Sort(plan.tenants)
	plan.tenants = slices.Compact(plan.tenants)
	return plan, nil
}

// preemptionCandidates is the candidates as placement.PlanPreemption takes
// them: each node with the victims on it that victim keeps, as it makes
// them, and the reservations booking each of its atoms in the window.
func preemptionCandidates(cands []placement.Candidate, rows []db.PreemptionVictimsRow, blockers []db.PreemptionBlockersRow,
	victim func(db.PreemptionVictimsRow) (placement.Victim, bool)) []placement.PreemptionCandidate {
	nodes := make(map[string]*placement.PreemptionCandidate, len(cands))
	for _, c := range cands {
		nodes[c.NodeID] = &placement.PreemptionCandidate{Candidate: c, Blockers: map[string][]string{}}
	}
	for _, r := range rows {
		n, ok := nodes[r.NodeID]
		if !ok {
			continue // a node added since the candidates were read
		}
		if v, ok := victim(r); ok {
			n.Victims = append(n.Victims, v)
		}
	}
	for _, b := range blockers {
		if n, ok := nodes[b.NodeID]; ok {
			n.Blockers[b.DeviceID] = append(n.Blockers[b.DeviceID], b.ReservationID)
		}
	}
	list := make([]placement.PreemptionCandidate, 0, len(nodes))
	for _, c := range cands {
		list = append(list, *nodes[c.NodeID])
	}
	return list
}

// deferrable says whether victim v may be cut back to a preemptor's start
// instead of ending now: its window began before that start (so something
// of it is left), and that start is more than its class's grace away, the
// time a preemption now would give its workloads anyway. A preemptor that
// starts sooner displaces it now.
func deferrable(v db.PreemptionVictimsRow, start time.Time) bool {
	return v.StartTs.Before(start) && start.Sub(v.Now) > time.Duration(v.GraceSeconds)*time.Second
}

// preempt ends the plan's victims inside a preempting transaction, whose
// first statement locked plan.tenants' quota rows (QuotaUsageLockTenants):
// the node, every device of it, its counters and its pool's rollup are
// locked next, in the lock order, then each victim ends as preempted.
// Ending a victim takes node_desired, last in the order, so nothing after
// it may wait for a lock the order puts before it: hence the counters up
// front. A victim that changed since the plan was read (another version,
// no longer booked or active) is errPreemptionLost.
func (h *Handlers) preempt(ctx context.Context, tx pgx.Tx, plan *preemptionPlan, by preemptor) error {
	var b pg.Batch
	pg.One(ctx, &b, (*db.Queries).NodeLockForPlacement, plan.NodeID, &db.NodeLockForPlacementRow{}, nil)
	pg.Many(ctx, &b, (*db.Queries).DeviceLockNodeForPreemption, plan.NodeID, &[]string{})
	pg.One(ctx, &b, (*db.Queries).NodeResourceLockForPreemption, plan.NodeID, &db.NodeResourceLockForPreemptionRow{}, nil)
	if err := b.Send(ctx, tx); err != nil {
		return pg.Translate(err, "node "+plan.NodeID)
	}
	if plan.cutBackTo != nil {
		return h.cutBack(ctx, tx, plan, by)
	}
	for _, v := range plan.victims {
		grace := v.GraceSeconds
		end := reservationEnd{to: core.ReservationPreempted, event: core.EventReservationPreempted,
			conditions: []core.Condition{{Type: core.ConditionPreempted, Status: true, Reason: "PreemptedByHigherPriority",
				Message: fmt.Sprintf("preempted by reservation %s (class %s, priority %d > %d); its workloads got %d s "+
					"between SIGTERM and the kill", by.id, by.class, by.priority, v.Priority, grace)}},
			reason: "preempted by reservation " + by.id, unassign: true, preemptedBy: by.id, grace: &grace}
		if _, err := endReservationWith(ctx, tx, system, v.ReservationID, v.Version, end, nil); err != nil {
			if c := core.CodeOf(err); c == core.CodeConflict || c == core.CodeNotFound {
				return fmt.Errorf("%w: reservation %s: %w", errPreemptionLost, v.ReservationID, err)
			}
			return err
		}
		if err := db.New(tx).ReservationPreemptionRecord(ctx, db.ReservationPreemptionRecordParams{VictimID: v.ReservationID,
			PreemptorID: by.id, VictimPriority: v.Priority, PreemptorPriority: by.priority, GraceSeconds: grace}); err != nil {
			return pg.Translate(err, "preemption of "+v.ReservationID)
		}
	}
	return nil
}

// placeAfterPreemption places p on the plan's node, whose victims preempt
// ended in this transaction; the savepoint's rollback after a failed
// attempt is queued in tail, as placeWith does. Nothing placed is
// errPreemptionLost: the freed atoms were taken first.
func (h *Handlers) placeAfterPreemption(ctx context.Context, tx pgx.Tx, p reservationToPlace, plan *preemptionPlan,
	tail *pg.Batch) (*placed, error) {
	if err := planBookingLookupsNow(ctx, tx); err != nil {
		return nil, err
	}
	where, reasons, err := h.placeWith(ctx, tx, p, []placement.Candidate{plan.Node}, nil, 0, tail)
	if err != nil {
		return nil, err
	}
	if where == nil {
		return nil, fmt.Errorf("%w: %s", errPreemptionLost, joinReasons(reasons))
	}
	return where, nil
}

// withPreemption runs a placing transaction (run) that may end with
// errMayPreempt: it then reads a plan and runs it again with the plan, at
// most PlacementAttempts times while the plan is lost to a concurrent
// change, and finally without preemption (nil plan, so run must not
// answer errMayPreempt again).
func withPreemption[T any](h *Handlers, plan func() (*preemptionPlan, error),
	run func(plan *preemptionPlan, mayPreempt bool) (T, error)) (T, error) {
	out, err := run(nil, true)
	if !errors.Is(err, errMayPreempt) {
		return out, err
	}
	for range h.placementAttempts() {
		plan, err := plan()
		if err != nil {
			return out, err
		}
		if plan == nil {
			break
		}
		out, err = run(plan, false)
		if !errors.Is(err, errPreemptionLost) {
			return out, err
		}
	}
	return run(nil, false)
}
