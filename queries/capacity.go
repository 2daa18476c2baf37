package queries

import (
	"context"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
)

// PoolCapacity is what a pool offers and what live reservations hold:
// scalars summed over its nodes, and bookable GPU atoms by kind, model and
// profile. Retired nodes are not part of it: retirement is terminal, so
// what they offered will never be booked again.
type PoolCapacity struct {
	PoolID        string     `json:"poolId"`
	SiteID        string     `json:"siteId"`
	Kind          string     `json:"kind"`
	Nodes         int64      `json:"nodes"`
	CordonedNodes int64      `json:"cordonedNodes"`
	VCPU          Scalar     `json:"vcpu"`
	MemoryMB      Scalar     `json:"memoryMb"`
	DiskGB        Scalar     `json:"diskGb"`
	GPUs          []AtomPool `json:"gpus"`
}

// AtomPool counts a pool's bookable atoms of one kind, model and profile:
// Schedulable is what the placer would book now, so it excludes unhealthy
// or quarantined GPUs and nodes that are cordoned, draining, unreachable or
// lost (an operator reading "schedulable" asks what new work can land on);
// Allocated is held by live reservations (now or later in their window).
type AtomPool struct {
	Kind        string `json:"kind"`
	Model       string `json:"model"`
	Profile     string `json:"profile,omitempty"`
	Total       int64  `json:"total"`
	Schedulable int64  `json:"schedulable"`
	Allocated   int64  `json:"allocated"`
}

// PoolCapacity reads a pool's capacity (operators only).
func (s *Service) PoolCapacity(ctx context.Context, actor core.Actor, poolID string, min outbox.Position) (PoolCapacity, error) {
	if err := requireOperator(actor, "pool capacity"); err != nil {
		return PoolCapacity{}, err
	}
	q, err := s.readModel(ctx, min, projections.NameFleet)
	if err != nil {
		return PoolCapacity{}, err
	}
	c, err := q.RmFleetPoolCapacity(ctx, poolID)
	if err != nil {
		return PoolCapacity{}, wrap(err, "pool "+poolID)
	}
	atoms, err := q.RmFleetDevicePoolSummary(ctx, poolID)
	if err != nil {
		return PoolCapacity{}, wrap(err, "GPUs of pool "+poolID)
	}
	out := PoolCapacity{PoolID: c.ID, SiteID: c.SiteID, Kind: c.Kind, Nodes: c.Nodes, CordonedNodes: c.CordonedNodes,
		VCPU:     Scalar{Capacity: c.VcpuCapacity, Allocated: c.VcpuAllocated},
		MemoryMB: Scalar{Capacity: c.MemoryCapacity, Allocated: c.MemoryAllocated},
		DiskGB:   Scalar{Capacity: c.DiskCapacity, Allocated: c.DiskAllocated},
		GPUs:     []AtomPool{}}
	for _, a := range atoms {
		out.GPUs = append(out.GPUs, AtomPool{Kind: a.Kind, Model: a.Model, Profile: a.Profile, Total: a.Total,
			Schedulable: a.Schedulable, Allocated: a.Allocated})
	}
	return out, nil
}
