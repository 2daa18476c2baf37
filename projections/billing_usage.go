package projections

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// UsageWindows (file billing_usage.go: a _windows suffix would be a GOOS
// build constraint) projects reservation events into billing usage:
// rm_usage_allocations holds each placed reservation's reserved interval
// and rm_usage_windows cuts it into hourly windows aligned on UTC hours,
// keyed cmp:<allocationId>:<windowStart> (the deduplication key billing
// uses). Reserved time is what is billed: a window's reserved_ms is the
// overlap of the reserved interval with the hour, device_ms that times the
// atoms held. The interval starts when the reservation was booked (never
// before its start) and ends at its end, or at the moment it was released,
// expired or failed; windows are final once it is terminal. Whenever the
// interval changes, the reservation's windows are recomputed whole.
type UsageWindows struct{}

// ID is the sink id and projection name.
func (UsageWindows) ID() string { return NameUsageWindows }

// Tables are the tables this projection owns.
func (UsageWindows) Tables() []string { return []string{"rm_usage_allocations", "rm_usage_windows"} }

// Apply writes each reservation event of the batch in tx. The windows of
// every reservation whose interval changed are recomputed once, after the
// batch's intervals, from the interval as it then stands (the same windows
// as recomputing after each event), all in one round trip.
func (UsageWindows) Apply(ctx context.Context, tx pgx.Tx, events []outbox.Stored) error {
	q := db.New(tx)
	var changed []string // reservation ids, in the order first changed
	err := applyEach(events, func(e outbox.Stored) error {
		if !reservationEventTypes[e.Type] {
			return nil
		}
		r, err := decodeReservation(e)
		if err != nil || !r.placed() {
			return err
		}
		n, err := applyUsage(ctx, q, e, r)
		if err != nil || n == 0 {
			return err // 0: already applied, windows are as they were
		}
		if !slices.Contains(changed, r.ID) {
			changed = append(changed, r.ID)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var b pg.Batch
	for _, id := range changed {
		pg.Exec(ctx, &b, (*db.Queries).RmUsageWindowDeleteFor, id)
		pg.Exec(ctx, &b, (*db.Queries).RmUsageWindowRecompute, id)
	}
	if err := b.Send(ctx, tx); err != nil {
		return fmt.Errorf("usage windows: %w", err)
	}
	return nil
}

// applyUsage moves the reservation's reserved interval as the event says
// and reports how many rows changed (0 when the event was already applied).
func applyUsage(ctx context.Context, q *db.Queries, e outbox.Stored, r reservationData) (int64, error) {
	switch {
	case e.Type == core.EventReservationBooked:
		// The pool is taken from the event alone (not from the fleet model,
		// another projection that may lag), so a rebuild gives the same rows.
		pool := r.PlacedPoolID
		if pool == "" {
			pool = r.PoolID // empty for a site reservation until events say where
		}
		vcpu, mem, disk, err := scalarsOf(ctx, q, r)
		if err != nil {
			return 0, err
		}
		b, err := billedOf(ctx, q, e, r)
		if err != nil {
			return 0, err
		}
		return q.RmUsageAllocationBook(ctx, db.RmUsageAllocationBookParams{ReservationID: r.ID,
			AllocationID: b.AllocationID, TenantID: r.Tenant, PoolID: pool, NodeID: r.NodeID,
			Devices: int32(len(r.DeviceIDs)), Vcpu: vcpu, MemoryMb: mem, DiskGb: disk, StartTs: r.Start, At: e.Time,
			EndTs: r.End, Version: r.Version, GpuKind: string(b.GPUKind), GpuModel: b.GPUModel,
			MigProfile: b.MIGProfile, SlotKind: string(b.SlotKind)})
	case r.ended():
		return q.RmUsageAllocationEndAt(ctx, db.RmUsageAllocationEndAtParams{ReservationID: r.ID, At: e.Time,
			Version: r.Version})
	default:
		return q.RmUsageAllocationSetEnd(ctx, db.RmUsageAllocationSetEndParams{ReservationID: r.ID, EndTs: r.End,
			Version: r.Version})
	}
}

// billed is what billing keys and prices a window by, besides the scalars:
// the allocation (the key is cmp:<allocationId>:<windowStart>) and the GPU
// request.
type billed struct {
	AllocationID string        `json:"allocationId"`
	GPUKind      core.AtomKind `json:"gpuKind"`
	GPUModel     string        `json:"gpuModel"`
	MIGProfile   string        `json:"migProfile"`
	SlotKind     core.GPUMode  `json:"slotKind"`
}

// billedOf reads the allocation id and GPU request from a booked event
// (core.ReservationEventData carries them). An event written before they
// were added takes them from the write model, where they never change once
// the reservation is placed, so a replay of an old log keys its windows by
// allocation all the same.
func billedOf(ctx context.Context, q *db.Queries, e outbox.Stored, r reservationData) (billed, error) {
	b, err := decode[billed](e)
	if err != nil || b.AllocationID != "" {
		return b, err
	}
	old, err := q.BillingUsageFallback(ctx, r.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return billed{AllocationID: r.ID}, nil // reservation gone from the write model: nothing better
	}
	if err != nil {
		return b, fmt.Errorf("allocation of reservation %s: %w", r.ID, err)
	}
	return billed{AllocationID: old.AllocationID, GPUKind: core.AtomKind(old.GpuKind), GPUModel: old.GpuModel,
		MIGProfile: old.MigProfile, SlotKind: core.GPUMode(old.SlotKind)}, nil
}
