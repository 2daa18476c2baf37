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
// atoms held. Each window is measured between its ends rounded down to the
// millisecond, so the windows add up to the interval measured whole
// (RmUsageWindowRecompute). The interval starts when the reservation was booked (never
// before its start) and ends at its end or at the moment it was released,
// expired, failed or preempted, whichever is earlier; windows are final once it is
// terminal. Whenever the
// interval changes, the reservation's windows are computed whole and the
// ones that differ written. A
// reservation whose booked event was pruned before a rebuild gets its
// interval from its next event and the write model (queueSeed).
type UsageWindows struct{}

// ID is the sink id and projection name.
func (UsageWindows) ID() string { return NameUsageWindows }

// Tables are the tables this projection owns.
func (UsageWindows) Tables() []string { return []string{"rm_usage_allocations", "rm_usage_windows"} }

// Apply writes each reservation event of the batch in tx, in two round
// trips: the intervals, in the events' order, then the windows of every
// reservation whose interval changed, recomputed once from the interval as
// it then stands (the same windows as recomputing after each event), by one
// statement for the whole batch that writes only the windows that differ.
func (UsageWindows) Apply(ctx context.Context, tx pgx.Tx, events []outbox.Stored) error {
	q := db.New(tx)
	var intervals pg.Batch
	type write struct {
		e    outbox.Stored
		r    reservationData
		rows int64
	}
	var writes []*write
	err := applyEach(events, func(e outbox.Stored) error {
		if !reservationEventTypes[e.Type] {
			return nil
		}
		r, err := decodeReservation(e)
		if err != nil || !r.placed() {
			return err
		}
		w := &write{e: e, r: r}
		writes = append(writes, w)
		return queueUsage(ctx, q, &intervals, e, r, &w.rows)
	})
	if err != nil {
		return err
	}
	if err := intervals.Send(ctx, tx); err != nil {
		return fmt.Errorf("usage intervals: %w", err)
	}
	// An event after the booking that changed nothing was applied before,
	// or its reservation has no interval: its booked event was pruned
	// before a rebuild. The second is seeded, and the event applied again,
	// in the events' order; the first changes nothing again. A batch
	// without either costs no round trip.
	var seeds pg.Batch
	for _, w := range writes {
		if w.rows > 0 || w.e.Type == core.EventReservationBooked {
			continue
		}
		if err := queueSeed(ctx, q, &seeds, w.e, w.r); err != nil {
			return err
		}
		if err := queueUsage(ctx, q, &seeds, w.e, w.r, &w.rows); err != nil {
			return err
		}
	}
	if err := seeds.Send(ctx, tx); err != nil {
		return fmt.Errorf("usage intervals seeded: %w", err)
	}
	var changed []string // reservation ids, in the order first changed
	for _, w := range writes {
		if w.rows > 0 && !slices.Contains(changed, w.r.ID) { // 0: already applied, windows are as they were
			changed = append(changed, w.r.ID)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	if err := db.New(tx).RmUsageWindowRecompute(ctx, changed); err != nil {
		return fmt.Errorf("usage windows: %w", err)
	}
	return nil
}

// queueUsage queues in b the move of the reservation's reserved interval
// that the event says; rows receives how many rows it changed (0 when the
// event was already applied). The fallbacks of events written before they
// carried everything read the write model through q at once: they read
// none of the rows queued before them.
func queueUsage(ctx context.Context, q *db.Queries, b *pg.Batch, e outbox.Stored, r reservationData, rows *int64) error {
	switch {
	case e.Type == core.EventReservationBooked:
		// The pool is taken from the event alone (not from the fleet model,
		// another projection that may lag), so a rebuild gives the same rows.
		pool := r.PlacedPoolID
		if pool == "" {
			pool = r.PoolID // an event written before booked events named the pool: empty for a site reservation
		}
		u, err := usageOf(ctx, q, e, r)
		if err != nil {
			return err
		}
		pg.ExecRows(ctx, b, (*db.Queries).RmUsageAllocationBook, db.RmUsageAllocationBookParams{ReservationID: r.ID,
			AllocationID: u.AllocationID, TenantID: r.Tenant, PoolID: pool, NodeID: r.NodeID,
			Devices: int32(len(r.DeviceIDs)), Vcpu: u.vcpu, MemoryMb: u.memoryMB, DiskGb: u.diskGB, StartTs: r.Start, At: e.Time,
			EndTs: r.End, Version: r.Version, GpuKind: string(u.GPUKind), GpuModel: u.GPUModel,
			MigProfile: u.MIGProfile, SlotKind: string(u.SlotKind)}, rows)
	case r.ended():
		pg.ExecRows(ctx, b, (*db.Queries).RmUsageAllocationEndAt, db.RmUsageAllocationEndAtParams{ReservationID: r.ID,
			At: e.Time, Version: r.Version}, rows)
	default:
		pg.ExecRows(ctx, b, (*db.Queries).RmUsageAllocationSetEnd, db.RmUsageAllocationSetEndParams{ReservationID: r.ID,
			EndTs: r.End, Version: r.Version}, rows)
	}
	return nil
}

// queueSeed queues in b the interval of a reservation whose booked event
// is not in the log (RmUsageAllocationSeed), from a later event of it and
// the write model; a reservation that has an interval keeps it.
func queueSeed(ctx context.Context, q *db.Queries, b *pg.Batch, e outbox.Stored, r reservationData) error {
	u, err := usageOf(ctx, q, e, r)
	if err != nil {
		return err
	}
	pg.ExecRows(ctx, b, (*db.Queries).RmUsageAllocationSeed, db.RmUsageAllocationSeedParams{ReservationID: r.ID,
		AllocationID: u.AllocationID, TenantID: r.Tenant, Devices: int32(len(r.DeviceIDs)), Vcpu: u.vcpu,
		MemoryMb: u.memoryMB, DiskGb: u.diskGB, StartTs: r.Start, EndTs: r.End, Version: r.Version,
		GpuKind: string(u.GPUKind), GpuModel: u.GPUModel, MigProfile: u.MIGProfile, SlotKind: string(u.SlotKind)}, nil)
	return nil
}

// usage is what an interval is keyed and priced by: the billed GPU
// request and allocation, and the scalars.
type usage struct {
	billed
	vcpu, memoryMB, diskGB int64
}

// usageOf reads usage from a placed reservation's event, with the write
// model's help for events written before they carried all of it.
func usageOf(ctx context.Context, q *db.Queries, e outbox.Stored, r reservationData) (usage, error) {
	vcpu, mem, disk, err := scalarsOf(ctx, q, r)
	if err != nil {
		return usage{}, err
	}
	bl, err := billedOf(ctx, q, e, r)
	if err != nil {
		return usage{}, err
	}
	return usage{billed: bl, vcpu: vcpu, memoryMB: mem, diskGB: disk}, nil
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
