package queries

import (
	"context"
	"fmt"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
)

// UsageWindow is one hour of one allocation's reserved device time (see
// projections.UsageWindows for the rule). Key, cmp:<allocationId>:<windowStart>,
// is the billing deduplication key. A window is Final once its reservation
// has ended; until then it may still change.
type UsageWindow struct {
	Key           string    `json:"key"`
	AllocationID  string    `json:"allocationId"`
	ReservationID string    `json:"reservationId"`
	Tenant        string    `json:"tenant"`
	PoolID        string    `json:"poolId,omitempty"`
	NodeID        string    `json:"nodeId"`
	WindowStart   time.Time `json:"windowStart"`
	WindowEnd     time.Time `json:"windowEnd"`
	ReservedMs    int64     `json:"reservedMs"`
	Devices       int32     `json:"devices"`
	DeviceMs      int64     `json:"deviceMs"`
	VCPU          int64     `json:"vcpu"`
	MemoryMB      int64     `json:"memoryMb"`
	DiskGB        int64     `json:"diskGb"`
	// The GPU request the devices were booked for: the atoms' kind (gpu,
	// mig or slot; absent without GPUs), and the model, MIG profile or
	// slot kind when it named one.
	GPUKind    string `json:"gpuKind,omitempty"`
	GPUModel   string `json:"gpuModel,omitempty"`
	MIGProfile string `json:"migProfile,omitempty"`
	SlotKind   string `json:"slotKind,omitempty"`
	Final      bool   `json:"final"`
}

// ClosedUsageWindows are the final windows of reservation id, in the order
// the billing sink sends them: the same JSON as GET /v1/usage-windows.
func (s *Service) ClosedUsageWindows(ctx context.Context, reservationID string) ([]UsageWindow, error) {
	rows, err := s.q().BillingWindowsClosed(ctx, reservationID)
	if err != nil {
		return nil, fmt.Errorf("closed usage windows of %s: %w", reservationID, err)
	}
	out := make([]UsageWindow, len(rows))
	for i, w := range rows {
		out[i] = usageWindowOf(w)
	}
	return out, nil
}

// usageWindowOf is the view of one rm_usage_windows row.
func usageWindowOf(w db.RmUsageWindow) UsageWindow {
	return UsageWindow{Key: w.Key, AllocationID: w.AllocationID, ReservationID: w.ReservationID,
		Tenant: w.TenantID, PoolID: w.PoolID, NodeID: w.NodeID, WindowStart: w.WindowStart.UTC(),
		WindowEnd: w.WindowEnd.UTC(), ReservedMs: w.ReservedMs, Devices: w.Devices, DeviceMs: w.DeviceMs,
		VCPU: w.Vcpu, MemoryMB: w.MemoryMb, DiskGB: w.DiskGb, GPUKind: w.GpuKind, GPUModel: w.GpuModel,
		MIGProfile: w.MigProfile, SlotKind: w.SlotKind, Final: w.Final}
}

// ListUsageWindows filters a list of usage windows.
type ListUsageWindows struct {
	Cursor        string
	Limit         int
	ReservationID string
	// Tenant narrows an operator's list; others see only their own.
	Tenant      string
	MinPosition outbox.Position
}

// ListUsageWindows pages through usage windows in (window start, key)
// order, tenant-scoped. It returns one page and the cursor of the next, ""
// on the last.
func (s *Service) ListUsageWindows(ctx context.Context, actor core.Actor, l ListUsageWindows) (items []UsageWindow, nextCursor string, err error) {
	limit, err := limitOf(l.Limit)
	if err != nil {
		return nil, "", err
	}
	after, err := DecodeCursor("usage", l.Cursor, 2)
	if err != nil {
		return nil, "", err
	}
	afterStart, afterKey := time.Unix(0, 0).UTC(), ""
	if after != nil {
		if afterStart, err = time.Parse(time.RFC3339Nano, after[0]); err != nil {
			return nil, "", core.Errorf(core.CodeInvalidArgument, "malformed cursor %q", core.Clip(l.Cursor, 64))
		}
		afterKey = after[1]
	}
	q, err := s.readModel(ctx, l.MinPosition, projections.NameUsageWindows)
	if err != nil {
		return nil, "", err
	}
	// One statement per shape of filter, each looked up by its own index
	// whatever plan the connection caches for it.
	var rows []db.RmUsageWindow
	max := int32(limit + 1)
	switch tenant := tenantFilter(actor, l.Tenant); {
	case l.ReservationID != "":
		rows, err = q.RmUsageWindowListOfReservation(ctx, db.RmUsageWindowListOfReservationParams{
			ReservationID: l.ReservationID, TenantID: tenant, AfterStart: afterStart, AfterKey: afterKey, MaxRows: max})
	case tenant != nil:
		rows, err = q.RmUsageWindowListOfTenant(ctx, db.RmUsageWindowListOfTenantParams{
			TenantID: *tenant, AfterStart: afterStart, AfterKey: afterKey, MaxRows: max})
	default:
		rows, err = q.RmUsageWindowList(ctx, db.RmUsageWindowListParams{AfterStart: afterStart, AfterKey: afterKey, MaxRows: max})
	}
	if err != nil {
		return nil, "", wrap(err, "usage windows")
	}
	items = []UsageWindow{}
	for i, w := range rows {
		if i == limit {
			last := rows[limit-1]
			nextCursor = EncodeCursor("usage", last.WindowStart.UTC().Format(time.RFC3339Nano), last.Key)
			break
		}
		items = append(items, usageWindowOf(w))
	}
	return items, nextCursor, nil
}
