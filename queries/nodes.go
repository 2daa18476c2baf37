package queries

import (
	"context"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
)

// Scalar is one scalar resource of a node or pool: capacity is allocatable
// scaled by the pool's overcommit ratio; allocated is what live
// reservations hold.
type Scalar struct {
	Allocatable int64 `json:"allocatable,omitempty"`
	Capacity    int64 `json:"capacity"`
	Allocated   int64 `json:"allocated"`
}

// Node is a node as operators see it: scheduling state and utilization,
// and in GetNode its devices with their bookings.
type Node struct {
	ID               string    `json:"id"`
	PoolID           string    `json:"poolId"`
	Cordoned         bool      `json:"cordoned"`
	Taints           []string  `json:"taints"`
	VCPU             Scalar    `json:"vcpu"`
	MemoryMB         Scalar    `json:"memoryMb"`
	DiskGB           Scalar    `json:"diskGb"`
	LiveReservations int64     `json:"liveReservations"`
	Version          int64     `json:"version"`
	RegisteredAt     time.Time `json:"registeredAt"`
	UpdatedAt        time.Time `json:"updatedAt"`
	Devices          []Device  `json:"devices,omitempty"`
}

// Device is a GPU or one of its atoms, with the GPU's health and
// quarantine, and its current and future bookings.
type Device struct {
	ID          string    `json:"id"`
	ParentID    string    `json:"parentId,omitempty"`
	Kind        string    `json:"kind"`
	Model       string    `json:"model"`
	Mode        string    `json:"mode,omitempty"`
	Profile     string    `json:"profile,omitempty"`
	Retired     bool      `json:"retired,omitempty"`
	Health      string    `json:"health"`
	Quarantined bool      `json:"quarantined"`
	Bookings    []Booking `json:"bookings"`
}

// Booking is one reservation's hold on an atom over [From, To).
type Booking struct {
	DeviceID      string    `json:"deviceId"`
	ReservationID string    `json:"reservationId"`
	Tenant        string    `json:"tenant"`
	NodeID        string    `json:"nodeId"`
	From          time.Time `json:"from"`
	To            time.Time `json:"to"`
}

func nodeOf(r db.RmFleetNodeGetRow) Node {
	return Node{ID: r.ID, PoolID: r.PoolID, Cordoned: r.Cordoned, Taints: r.Taints,
		VCPU:             Scalar{Allocatable: r.Vcpu, Capacity: r.VcpuCapacity, Allocated: r.VcpuAllocated},
		MemoryMB:         Scalar{Allocatable: r.MemoryMb, Capacity: r.MemoryCapacity, Allocated: r.MemoryAllocated},
		DiskGB:           Scalar{Allocatable: r.DiskGb, Capacity: r.DiskCapacity, Allocated: r.DiskAllocated},
		LiveReservations: r.LiveReservations, Version: r.Version,
		RegisteredAt: r.RegisteredAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// GetNode reads one node with its devices and their bookings from now on
// (operators only).
func (s *Service) GetNode(ctx context.Context, actor core.Actor, id string, min outbox.Position) (Node, error) {
	if err := requireOperator(actor, "nodes"); err != nil {
		return Node{}, err
	}
	if err := s.waitFor(ctx, min, projections.NameFleet, projections.NameDeviceHolders); err != nil {
		return Node{}, err
	}
	q := s.q()
	r, err := q.RmFleetNodeGet(ctx, id)
	if err != nil {
		return Node{}, wrap(err, "node "+id)
	}
	n := nodeOf(r)
	devices, err := q.RmFleetDeviceListByNode(ctx, id)
	if err != nil {
		return Node{}, wrap(err, "devices of node "+id)
	}
	now, err := q.ClockNow(ctx)
	if err != nil {
		return Node{}, wrap(err, "clock")
	}
	holds, err := q.RmDeviceHolderListFrom(ctx, db.RmDeviceHolderListFromParams{NodeID: id, At: now})
	if err != nil {
		return Node{}, wrap(err, "bookings of node "+id)
	}
	byDevice := map[string][]Booking{}
	for _, h := range holds {
		byDevice[h.DeviceID] = append(byDevice[h.DeviceID], Booking{DeviceID: h.DeviceID, ReservationID: h.ReservationID,
			Tenant: h.TenantID, NodeID: h.NodeID, From: h.FromTs.UTC(), To: h.ToTs.UTC()})
	}
	n.Devices = []Device{}
	for _, d := range devices {
		b := byDevice[d.ID]
		if b == nil {
			b = []Booking{}
		}
		n.Devices = append(n.Devices, Device{ID: d.ID, ParentID: deref(d.ParentID), Kind: d.Kind, Model: d.Model,
			Mode: deref(d.Mode), Profile: deref(d.Profile), Retired: d.Retired, Health: d.Health,
			Quarantined: d.Quarantined, Bookings: b})
	}
	return n, nil
}

// ListNodes filters a list of nodes.
type ListNodes struct {
	PoolID      string
	Cursor      string
	Limit       int
	MinPosition outbox.Position
}

// ListNodes pages through nodes in id order, optionally of one pool
// (operators only). Devices are left out; GetNode has them.
func (s *Service) ListNodes(ctx context.Context, actor core.Actor, l ListNodes) (Page[Node], error) {
	if err := requireOperator(actor, "nodes"); err != nil {
		return Page[Node]{}, err
	}
	limit, err := limitOf(l.Limit)
	if err != nil {
		return Page[Node]{}, err
	}
	after, err := decodeCursor("node", l.Cursor, 1)
	if err != nil {
		return Page[Node]{}, err
	}
	afterID := ""
	if after != nil {
		afterID = after[0]
	}
	if err := s.waitFor(ctx, l.MinPosition, projections.NameFleet); err != nil {
		return Page[Node]{}, err
	}
	var pool *string
	if l.PoolID != "" {
		pool = &l.PoolID
	}
	rows, err := s.q().RmFleetNodeList(ctx, db.RmFleetNodeListParams{PoolID: pool, AfterID: afterID, MaxRows: int32(limit + 1)})
	if err != nil {
		return Page[Node]{}, wrap(err, "nodes")
	}
	page := Page[Node]{Items: []Node{}}
	for i, r := range rows {
		if i == limit {
			page.NextCursor = encodeCursor("node", rows[limit-1].ID)
			break
		}
		page.Items = append(page.Items, nodeOf(db.RmFleetNodeGetRow(r)))
	}
	return page, nil
}
