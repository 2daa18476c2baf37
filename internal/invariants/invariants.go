// Package invariants checks the capacity core's invariants against a
// database with plain queries (sqlc, sql/queries/invariants.sql), so the
// same checks serve the torture test and `compute check` on a live fleet.
// Each check returns violations, never an error for bad data: an empty list
// is a pass.
package invariants

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// Violation is one broken invariant instance.
type Violation struct {
	// Invariant names the rule, e.g. "booking-overlap".
	Invariant string
	// Detail says which rows break it.
	Detail string
}

func (v Violation) String() string { return v.Invariant + ": " + v.Detail }

// Names of the invariants, in the order Check runs them.
const (
	BookingOverlap     = "booking-overlap"
	ParentChildOverlap = "parent-child-overlap"
	AtomRule           = "atom-rule"
	NodeCounter        = "node-counter"
	PoolRollup         = "pool-rollup"
	Quota              = "quota"
	AllocationState    = "allocation-state"
	StrayBooking       = "stray-booking"
	PriorityClass      = "priority-class"
	// The rules of preemption (docs/concepts/priority.md#preemption).
	PreemptionPriority   = "preemption-priority"
	PreemptedLiveBooking = "preempted-live-booking"
	PreemptionGrace      = "preemption-grace"
	EventVersions        = "event-versions"
	BookingAfterCordon   = "booking-after-ineligible"
	// UsageHeld: the usage windows billed for an ended reservation add up
	// to what its allocation held (docs/concepts/billing.md).
	UsageHeld = "usage-held"
)

// PreemptionGraceSlack is how long after a preempted reservation's grace
// its node may still report an instance of it unfinished before
// PreemptionGrace calls it a violation: the unassign must be dispatched,
// carried out and reported, which takes a connected daemon a few seconds;
// a minute tells a slow report from a node that ignored the preemption.
const PreemptionGraceSlack = time.Minute

// All lists every invariant name, for reports that print one line each.
var All = []string{BookingOverlap, ParentChildOverlap, AtomRule, NodeCounter, PoolRollup, Quota,
	AllocationState, StrayBooking, PriorityClass, PreemptionPriority, PreemptedLiveBooking, PreemptionGrace, EventVersions,
	BookingAfterCordon, UsageHeld}

// Check runs every invariant. Run it on a quiet database or inside one
// REPEATABLE READ transaction, so that all checks see one snapshot.
func Check(ctx context.Context, q *db.Queries) ([]Violation, error) {
	var out []Violation
	add := func(inv, f string, a ...any) { out = append(out, Violation{inv, fmt.Sprintf(f, a...)}) }

	overlaps, err := q.InvariantBookingOverlaps(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", BookingOverlap, err)
	}
	for _, r := range overlaps {
		add(BookingOverlap, "%s booked by %s and %s (bookings %d, %d)", r.DeviceID, r.FirstAllocation, r.SecondAllocation, r.FirstID, r.SecondID)
	}
	pc, err := q.InvariantParentChildOverlaps(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ParentChildOverlap, err)
	}
	for _, r := range pc {
		add(ParentChildOverlap, "GPU %s (%s) and atom %s (%s) booked at once", r.GpuID, r.GpuAllocation, r.AtomID, r.AtomAllocation)
	}
	atoms, err := q.InvariantAtomRule(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", AtomRule, err)
	}
	for _, id := range atoms {
		add(AtomRule, "GPU %s is bookable while it has live atoms", id)
	}
	counters, err := q.InvariantNodeResourceDrift(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", NodeCounter, err)
	}
	for _, r := range counters {
		add(NodeCounter, "node %s %s allocated %d, live allocations %d, capacity %d", r.NodeID, r.Resource, r.Allocated, r.LiveTotal, r.Capacity)
	}
	rollups, err := q.InvariantRollupDrift(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", PoolRollup, err)
	}
	for _, r := range rollups {
		add(PoolRollup, "pool %s %s rollup %d/%d, nodes %d/%d", r.PoolID, r.Resource, r.Allocated, r.Capacity, r.NodesAllocated, r.NodesCapacity)
	}
	quotas, err := q.InvariantQuotaDrift(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Quota, err)
	}
	for _, r := range quotas {
		add(Quota, "tenant %s %s used %d, charged %d, max %d", r.TenantID, r.Resource, r.Used, r.Charged, r.Max)
	}
	allocs, err := q.InvariantAllocationState(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", AllocationState, err)
	}
	for _, r := range allocs {
		add(AllocationState, "reservation %s is %s with %d live allocations", r.ID, r.State, r.LiveAllocations)
	}
	strays, err := q.InvariantStrayBookings(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", StrayBooking, err)
	}
	for _, r := range strays {
		add(StrayBooking, "booking %d of %s by %s outlives its allocation", r.ID, r.DeviceID, r.AllocationID)
	}
	classes, err := q.InvariantPriorityClasses(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", PriorityClass, err)
	}
	for _, r := range classes {
		add(PriorityClass, "reservation %s is of class %q (priority %d, preemptible %t), which does not exist or differs",
			r.ID, r.PriorityClass, r.Priority, r.Preemptible)
	}
	if err := checkPreemptions(ctx, q, add); err != nil {
		return nil, err
	}
	versions, err := q.InvariantEventVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EventVersions, err)
	}
	for _, r := range versions {
		add(EventVersions, "%s at version %d has %d events, %d distinct versions, highest %d",
			r.Subject, r.Version, r.Events, r.DistinctVersions, r.MaxVersion)
	}
	late, err := bookingsAfterIneligible(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", BookingAfterCordon, err)
	}
	out = append(out, late...)
	usage, err := q.InvariantUsageHeld(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", UsageHeld, err)
	}
	for _, r := range usage {
		if !r.AllocationFound {
			add(UsageHeld, "reservation %s is billed for allocation %s, which does not exist", r.ReservationID, r.AllocationID)
			continue
		}
		add(UsageHeld, "reservation %s (allocation %s) held %d ms on %d atoms, its windows bill %d ms and %d device ms",
			r.ReservationID, r.AllocationID, r.HeldMs, r.Devices, r.BilledMs, r.BilledDeviceMs)
	}
	return out, nil
}

// checkPreemptions runs the three rules of preemption: who may displace
// whom (PreemptionPriority), that a displaced reservation holds nothing
// from then on (PreemptedLiveBooking), and that its node reported its
// workloads gone once their grace ran out (PreemptionGrace).
func checkPreemptions(ctx context.Context, q *db.Queries, add func(inv, f string, a ...any)) error {
	prio, err := q.InvariantPreemptionPriority(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", PreemptionPriority, err)
	}
	for _, r := range prio {
		if !r.Recorded {
			add(PreemptionPriority, "reservation %s is preempted but no preemption of it is recorded", r.ReservationID)
			continue
		}
		add(PreemptionPriority, "reservation %s (%s, preemptible %t, priority %d, recorded %d) preempted by %s "+
			"(priority %d, recorded %d): not a preemptible victim of a strictly higher priority",
			r.ReservationID, r.State, r.Preemptible, r.Priority, r.RecordedPriority, r.PreemptorID,
			r.PreemptorPriority, r.RecordedPreemptorPriority)
	}
	held, err := q.InvariantPreemptedHoldings(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", PreemptedLiveBooking, err)
	}
	live := map[string]bool{}
	for _, r := range held {
		if r.Live && !live[r.AllocationID] {
			live[r.AllocationID] = true
			add(PreemptedLiveBooking, "preempted reservation %s still holds live allocation %s", r.ReservationID, r.AllocationID)
		}
		if r.BookingID != 0 {
			add(PreemptedLiveBooking, "booking %d of %s by preempted reservation %s lasts until %s, past its preemption at %s",
				r.BookingID, r.DeviceID, r.ReservationID, r.BookedUntil, r.Cut)
		}
	}
	grace, err := q.InvariantPreemptionGrace(ctx, PreemptionGraceSlack.Seconds())
	if err != nil {
		return fmt.Errorf("%s: %w", PreemptionGrace, err)
	}
	for _, r := range grace {
		add(PreemptionGrace, "instance %s of reservation %s preempted at %s is still %s on node %s after its %d s grace and %s",
			r.InstanceID, r.ReservationID, r.PreemptedAt.UTC().Format(time.RFC3339), r.State, r.NodeID, r.GraceSeconds, PreemptionGraceSlack)
	}
	return nil
}

// bookingsAfterIneligible replays node and GPU events in outbox order and
// checks that no booking was written after a committed cordon or
// untolerated taint of its node, or quarantine or health loss of its GPU.
// Every booking draws created_seq from the outbox's sequence after its
// placer locked the node and GPU rows FOR SHARE; a cordon draws its event's
// seq after locking the node FOR UPDATE. Of two transactions that conflict
// on a row, the one that waited draws the higher number, so seq order is
// commit order for exactly the pairs this check compares.
func bookingsAfterIneligible(ctx context.Context, q *db.Queries) ([]Violation, error) {
	events, err := q.InvariantEligibilityEvents(ctx, core.EligibilityEventTypes)
	if err != nil {
		return nil, err
	}
	bookings, err := q.InvariantBookingsInOrder(ctx)
	if err != nil {
		return nil, err
	}
	// A node's and a GPU's scheduling state as the log tells it: every
	// node event of core.EligibilityEventTypes carries the fields of
	// core.NodeSchedulingEventData, every GPU event those of
	// core.DeviceStatusEventData.
	nodes := map[string]core.NodeSchedulingEventData{}
	gpus := map[string]core.DeviceStatusEventData{}
	var out []Violation
	i := 0
	for _, b := range bookings {
		for ; i < len(events) && events[i].Seq < b.CreatedSeq; i++ {
			e := events[i]
			switch {
			case len(e.Subject) > 6 && e.Subject[:6] == "nodes/":
				var st core.NodeSchedulingEventData
				if err := json.Unmarshal(e.Data, &st); err != nil {
					return nil, fmt.Errorf("decode %s event: %w", e.Type, err)
				}
				nodes[e.Subject[6:]] = st
			case len(e.Subject) > 8 && e.Subject[:8] == "devices/":
				var st core.DeviceStatusEventData
				if err := json.Unmarshal(e.Data, &st); err != nil {
					return nil, fmt.Errorf("decode %s event: %w", e.Type, err)
				}
				gpus[e.Subject[8:]] = st
			}
		}
		n, g := nodes[b.NodeID], gpus[b.GpuID]
		switch {
		case n.Cordoned:
			out = append(out, Violation{BookingAfterCordon, fmt.Sprintf("booking %d of %s made on cordoned node %s", b.ID, b.DeviceID, b.NodeID)})
		case g.Quarantined:
			out = append(out, Violation{BookingAfterCordon, fmt.Sprintf("booking %d of %s made on quarantined GPU %s", b.ID, b.DeviceID, b.GpuID)})
		case g.Health != "" && g.Health != "healthy":
			out = append(out, Violation{BookingAfterCordon, fmt.Sprintf("booking %d of %s made on unhealthy GPU %s", b.ID, b.DeviceID, b.GpuID)})
		}
		for _, t := range n.Taints {
			if !slices.Contains(b.Tolerations, t) {
				out = append(out, Violation{BookingAfterCordon, fmt.Sprintf("booking %d of %s made on node %s with untolerated taint %s", b.ID, b.DeviceID, b.NodeID, t)})
			}
		}
	}
	return out, nil
}
