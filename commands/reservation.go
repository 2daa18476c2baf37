package commands

import (
	"context"

	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
)

// ReservationResult is a reservation as written, and the position of the
// last event the command wrote (zero when it wrote none).
type ReservationResult struct {
	Reservation core.Reservation `json:"reservation"`
	Position    outbox.Position  `json:"position"`
}

// loadReservation reads a reservation the actor may see. Another tenant's
// reservation is NOT_FOUND, never a hint that it exists.
func loadReservation(ctx context.Context, q *db.Queries, actor core.Actor, id string) (db.ReservationGetRow, error) {
	r, err := q.ReservationGet(ctx, id)
	if err != nil {
		return r, pg.Translate(err, "reservation "+id)
	}
	if !actor.Sees(r.TenantID) {
		return r, core.Errorf(core.CodeNotFound, "reservation %s not found", id)
	}
	return r, nil
}

// toReservation builds the core view of a reservation row and its live
// allocations.
func toReservation(r db.ReservationGetRow, allocs []db.AllocationListLiveRow) (core.Reservation, error) {
	out := core.Reservation{ID: r.ID, Tenant: r.TenantID, State: core.State(r.State), Start: r.StartTs.UTC(),
		End: r.EndTs.UTC(), Version: r.Version, PriorityClass: r.PriorityClass, Priority: r.Priority,
		Preemptible: r.Preemptible}
	if r.PoolID != nil {
		out.PoolID = *r.PoolID
	}
	if r.SiteID != nil {
		out.SiteID = *r.SiteID
	}
	if err := json.Unmarshal(r.Spec, &out.Spec); err != nil {
		return out, fmt.Errorf("decode reservation spec: %w", err)
	}
	if err := json.Unmarshal(r.Charges, &out.Charges); err != nil {
		return out, fmt.Errorf("decode reservation charges: %w", err)
	}
	if err := json.Unmarshal(r.Conditions, &out.Conditions); err != nil {
		return out, fmt.Errorf("decode reservation conditions: %w", err)
	}
	for _, a := range allocs {
		out.NodeID = a.NodeID
		out.DeviceIDs = append(out.DeviceIDs, a.DeviceIds...)
	}
	return out, nil
}

// readReservation loads a reservation with its live allocations.
func readReservation(ctx context.Context, q *db.Queries, actor core.Actor, id string) (core.Reservation, error) {
	r, err := loadReservation(ctx, q, actor, id)
	if err != nil {
		return core.Reservation{}, err
	}
	allocs, err := q.AllocationListLive(ctx, id)
	if err != nil {
		return core.Reservation{}, pg.Translate(err, "allocations")
	}
	return toReservation(r, allocs)
}

// GetReservation reads one reservation from the write model.
func (h *Handlers) GetReservation(ctx context.Context, actor core.Actor, id string) (core.Reservation, error) {
	return readReservation(ctx, db.New(h.Pool), actor, id)
}

// refundQuota gives back exactly what a reservation was charged. The ends
// lock the quota rows first (lock order) and refund after the
// version-guarded transition, so racing ends cannot refund twice.
func refundQuota(ctx context.Context, q *db.Queries, tenant string, chargesJSON []byte) error {
	var charges map[string]int64
	if err := json.Unmarshal(chargesJSON, &charges); err != nil {
		return fmt.Errorf("decode charges: %w", err)
	}
	for _, res := range slices.Sorted(maps.Keys(charges)) {
		n, err := q.QuotaUsageRefund(ctx, db.QuotaUsageRefundParams{TenantID: tenant, Resource: res, Amount: charges[res]})
		if err != nil {
			return pg.Translate(err, "quota "+res)
		}
		if n == 0 {
			return fmt.Errorf("refund %d %s to %s: quota row missing or below the charge", charges[res], res, tenant)
		}
	}
	return nil
}

// scheduleBooked enqueues the reconcilers a booked reservation needs: its
// activation at start and its expiry at end.
func scheduleBooked(ctx context.Context, q *db.Queries, id string, now, start, end time.Time) error {
	if err := workqueue.Enqueue(ctx, q, KindReservationActivate, id, max(start.Sub(now), 0)); err != nil {
		return err
	}
	return workqueue.Enqueue(ctx, q, KindReservationExpire, id, max(end.Sub(now), 0))
}

// reservationEvent is the data of every reservation event: enough for a
// read model to be rebuilt from the log alone, billing included (the
// allocation id and the scalars reserved). allocationID is the
// reservation's allocation, "" while it holds none.
func reservationEvent(r core.Reservation, allocationID string) core.ReservationEventData {
	return core.NewReservationEventData(r, allocationID)
}

// allocationOf is the id of the allocation among a reservation's live
// allocations (a reservation has at most one), "" when there is none.
func allocationOf(allocs []db.AllocationListLiveRow) string {
	if len(allocs) == 0 {
		return ""
	}
	return allocs[0].ID
}

func unschedulable(reasons []string) []core.Condition {
	msg := "no node can take this reservation now; retrying every 30 s"
	if len(reasons) > 0 {
		msg = "no node can take this reservation now: " + joinReasons(reasons)
	}
	return []core.Condition{{Type: core.ConditionUnschedulable, Status: true, Reason: "NoNodeFits", Message: msg}}
}

func joinReasons(r []string) string {
	out := ""
	for i, s := range r {
		if i > 0 {
			out += "; "
		}
		out += s
	}
	return out
}

// capacityFreed is what queueFreeCapacity queued, checked once sent.
type capacityFreed struct {
	allocs       []db.AllocationListLiveRow
	scalars      []string
	amounts      []int64
	nodeRefunded [][]string
	rolledUp     [][]string
	released     []int64
}

// queueFreeCapacity queues freeCapacity's statements for allocs, the
// reservation's live allocations as read: counters and the pool rollup are
// given back set-based, in lock order, then each allocation is released
// with its bookings (those that have not started deleted, a running one
// ended now).
func queueFreeCapacity(ctx context.Context, b *pg.Batch, allocs []db.AllocationListLiveRow, spec core.ReservationSpec) *capacityFreed {
	f := &capacityFreed{allocs: allocs, nodeRefunded: make([][]string, len(allocs)),
		rolledUp: make([][]string, len(allocs)), released: make([]int64, len(allocs))}
	f.scalars, f.amounts = scalarAmounts(spec, 1)
	deltas := make([]int64, len(f.amounts))
	for i, a := range f.amounts {
		deltas[i] = -a
	}
	for i, a := range allocs {
		if len(f.scalars) > 0 {
			pg.Many(ctx, b, (*db.Queries).NodeResourceRefundMany, db.NodeResourceRefundManyParams{NodeID: a.NodeID,
				Resources: f.scalars, Amounts: f.amounts}, &f.nodeRefunded[i])
			pg.Many(ctx, b, (*db.Queries).PoolCapacityRollupAdjustMany, db.PoolCapacityRollupAdjustManyParams{PoolID: a.PoolID,
				Resources: f.scalars, Deltas: deltas}, &f.rolledUp[i])
		}
		pg.ExecRows(ctx, b, (*db.Queries).AllocationReleaseWithBookings, db.AllocationReleaseWithBookingsParams{
			AllocationID: a.ID, NodeID: a.NodeID}, &f.released[i])
	}
	return f
}

// check fails when a counter or rollup refused its refund.
func (f *capacityFreed) check() error {
	for i, a := range f.allocs {
		for j, r := range f.scalars {
			if !slices.Contains(f.nodeRefunded[i], r) {
				return fmt.Errorf("refund %d %s to node %s: counter below the allocation", f.amounts[j], r, a.NodeID)
			}
		}
		for _, r := range f.scalars {
			if !slices.Contains(f.rolledUp[i], r) {
				return fmt.Errorf("pool %s capacity rollup for %s out of range: %w", a.PoolID, r, errRollupDrift)
			}
		}
	}
	return nil
}
