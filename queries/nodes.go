package queries

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
)

// Scalar is one scalar resource of a node or pool: capacity is allocatable
// scaled by the pool's overcommit ratio; allocated is what live
// reservations hold. PendingAllocatable, on a node only, is a smaller
// allocatable that its daemon reported while its bookings held more: new
// bookings are held to it already, and it replaces allocatable once the
// bookings fit it (nil: none waits).
type Scalar struct {
	Allocatable        int64  `json:"allocatable,omitempty"`
	PendingAllocatable *int64 `json:"pendingAllocatable,omitempty"`
	Capacity           int64  `json:"capacity"`
	Allocated          int64  `json:"allocated"`
}

// Node is a node as operators see it: scheduling state, liveness,
// generations and utilization, and in GetNode its devices with their
// bookings.
type Node struct {
	ID       string   `json:"id"`
	PoolID   string   `json:"poolId"`
	Cordoned bool     `json:"cordoned"`
	Taints   []string `json:"taints"`
	// Liveness is the node's state: registered, connected, disconnected,
	// unreachable, lost or retired.
	Liveness string `json:"liveness"`
	// LastHeartbeatAt is when a gateway last heard from its daemon, and
	// SecondsSinceHeartbeat how long before compute_now() at read time;
	// both null for a node whose daemon never connected.
	LastHeartbeatAt       *time.Time `json:"lastHeartbeatAt"`
	SecondsSinceHeartbeat *float64   `json:"secondsSinceHeartbeat"`
	// NoScheduleReasons keep the node out of placement (unreachable,
	// draining); Conditions are what the system observed about it
	// (NodeUnreachable, GPUMissing, GPUMismatch, WorkloadsRefused: each with
	// a reason and a message, e.g. why the daemon refuses workloads).
	NoScheduleReasons []string        `json:"noScheduleReasons"`
	Conditions        []NodeCondition `json:"conditions"`
	// Generation is the node's desired-spec generation, ObservedGeneration
	// the one its daemon reports as applied.
	Generation         int64 `json:"generation"`
	ObservedGeneration int64 `json:"observedGeneration"`
	// Allocations counts the live (booked or active) allocations on the
	// node: what its daemon should hold as assignments.
	Allocations      int64     `json:"allocations"`
	VCPU             Scalar    `json:"vcpu"`
	MemoryMB         Scalar    `json:"memoryMb"`
	DiskGB           Scalar    `json:"diskGb"`
	LiveReservations int64     `json:"liveReservations"`
	Version          int64     `json:"version"`
	RegisteredAt     time.Time `json:"registeredAt"`
	UpdatedAt        time.Time `json:"updatedAt"`
	Devices          []Device  `json:"devices,omitempty"`
}

// NodeCondition is an observation about a node, with when it was first
// raised.
type NodeCondition struct {
	Type    string    `json:"type"`
	Status  bool      `json:"status"`
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since"`
}

// Device is a GPU or one of its atoms, with the GPU's health and
// quarantine, and its current and future bookings.
type Device struct {
	ID          string `json:"id"`
	ParentID    string `json:"parentId,omitempty"`
	Kind        string `json:"kind"`
	Model       string `json:"model"`
	Mode        string `json:"mode,omitempty"`
	Profile     string `json:"profile,omitempty"`
	Retired     bool   `json:"retired,omitempty"`
	Health      string `json:"health"`
	Quarantined bool   `json:"quarantined"`
	// MIGCapable, on a GPU only, says whether it takes a MIG layout: as
	// its node's daemon reported it, else as its model says
	// (core.MIGComputeSlices), the rule PUT /v1/gpus/{id}/mode applies.
	MIGCapable *bool     `json:"migCapable,omitempty"`
	Version    int64     `json:"version"` // the GPU's (an atom's GPU's): If-Match of its quarantine, health and mode
	Bookings   []Booking `json:"bookings"`
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

func nodeOf(r db.RmFleetNodeGetRow) (Node, error) {
	n := Node{ID: r.ID, PoolID: r.PoolID, Cordoned: r.Cordoned, Taints: r.Taints,
		Liveness: r.State, NoScheduleReasons: r.NoScheduleReasons, Conditions: []NodeCondition{},
		Generation: r.Generation, ObservedGeneration: r.ObservedGeneration, Allocations: r.LiveReservations,
		VCPU: Scalar{Allocatable: r.Vcpu, PendingAllocatable: r.VcpuPending, Capacity: r.VcpuCapacity,
			Allocated: r.VcpuAllocated},
		MemoryMB: Scalar{Allocatable: r.MemoryMb, PendingAllocatable: r.MemoryMbPending, Capacity: r.MemoryCapacity,
			Allocated: r.MemoryAllocated},
		DiskGB: Scalar{Allocatable: r.DiskGb, PendingAllocatable: r.DiskGbPending, Capacity: r.DiskCapacity,
			Allocated: r.DiskAllocated},
		LiveReservations: r.LiveReservations, Version: r.Version,
		RegisteredAt: r.RegisteredAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	if n.NoScheduleReasons == nil {
		n.NoScheduleReasons = []string{}
	}
	if len(r.Conditions) > 0 {
		if err := json.Unmarshal(r.Conditions, &n.Conditions); err != nil {
			return Node{}, fmt.Errorf("conditions of node %s: %w", r.ID, err)
		}
		if n.Conditions == nil {
			n.Conditions = []NodeCondition{}
		}
		for i := range n.Conditions {
			n.Conditions[i].Since = n.Conditions[i].Since.UTC()
		}
	}
	if r.LastSeenAt != nil {
		at := r.LastSeenAt.UTC()
		// A heartbeat is never in the future (last_seen_at is clamped to
		// compute_now()), but the read may race a flush: never negative.
		age := math.Round(max(r.ReadAt.Sub(at).Seconds(), 0)*1000) / 1000
		n.LastHeartbeatAt, n.SecondsSinceHeartbeat = &at, &age
	}
	return n, nil
}

// GetNode reads one node with its devices and their bookings from now on
// (operators only).
func (s *Service) GetNode(ctx context.Context, actor core.Actor, id string, min outbox.Position) (Node, error) {
	if err := requireOperator(actor, "nodes"); err != nil {
		return Node{}, err
	}
	q, err := s.readModel(ctx, min, projections.NameFleet, projections.NameDeviceHolders)
	if err != nil {
		return Node{}, err
	}
	r, err := q.RmFleetNodeGet(ctx, id)
	if err != nil {
		return Node{}, wrap(err, "node "+id)
	}
	n, err := nodeOf(r)
	if err != nil {
		return Node{}, err
	}
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
		var mig *bool
		if d.Kind == string(core.AtomGPU) {
			capable := core.MIGComputeSlices(d.Model, d.MigCapable) > 0
			mig = &capable
		}
		n.Devices = append(n.Devices, Device{ID: d.ID, ParentID: deref(d.ParentID), Kind: d.Kind, Model: d.Model,
			Mode: deref(d.Mode), Profile: deref(d.Profile), Retired: d.Retired, Health: d.Health,
			Quarantined: d.Quarantined, MIGCapable: mig, Version: d.GpuVersion, Bookings: b})
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
// (operators only). Devices are left out; GetNode has them. It returns one
// page and the cursor of the next, "" on the last.
func (s *Service) ListNodes(ctx context.Context, actor core.Actor, l ListNodes) (items []Node, nextCursor string, err error) {
	if err := requireOperator(actor, "nodes"); err != nil {
		return nil, "", err
	}
	limit, err := limitOf(l.Limit)
	if err != nil {
		return nil, "", err
	}
	after, err := DecodeCursor("node", l.Cursor, 1)
	if err != nil {
		return nil, "", err
	}
	afterID := ""
	if after != nil {
		afterID = after[0]
	}
	q, err := s.readModel(ctx, l.MinPosition, projections.NameFleet)
	if err != nil {
		return nil, "", err
	}
	var pool *string
	if l.PoolID != "" {
		pool = &l.PoolID
	}
	rows, err := q.RmFleetNodeList(ctx, db.RmFleetNodeListParams{PoolID: pool, AfterID: afterID, MaxRows: int32(limit + 1)})
	if err != nil {
		return nil, "", wrap(err, "nodes")
	}
	items = []Node{}
	for i, r := range rows {
		if i == limit {
			nextCursor = EncodeCursor("node", rows[limit-1].ID)
			break
		}
		n, err := nodeOf(db.RmFleetNodeGetRow(r))
		if err != nil {
			return nil, "", err
		}
		items = append(items, n)
	}
	return items, nextCursor, nil
}
