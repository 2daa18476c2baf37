package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/wire"
)

// Pool kinds. Only provider and vps-host pools may set LostAfter: bare
// metal is never declared lost automatically.
const (
	PoolBareMetal = "bare-metal"
	PoolProvider  = "provider"
	PoolVPSHost   = "vps-host"
)

// Workload network modes of a pool: what network its allocations'
// workloads get, carried to the daemon in every assign
// (wire.AssignPayload.Network).
const (
	// WorkloadNetworkNone, the default: a network namespace of its own
	// with only loopback.
	WorkloadNetworkNone = wire.NetworkNone
	// WorkloadNetworkBridge: a namespace of its own with NAT egress; the
	// node's own addresses, metadata addresses, the control plane and other
	// allocations are refused.
	WorkloadNetworkBridge = wire.NetworkBridge
	// WorkloadNetworkHost: the node's own network. For pools with a single
	// tenant only: a workload reaches whatever the node reaches, its
	// loopback and its neighbours' allocations included.
	WorkloadNetworkHost = wire.NetworkHost
)

// CreatePool adds a pool of nodes to a site. Ratios of 0 mean 1 (no
// overcommit); a WorkloadNetwork of "" means WorkloadNetworkNone.
// IdempotencyKey is optional.
type CreatePool struct {
	ID              string        `json:"id"`
	SiteID          string        `json:"siteId"`
	Kind            string        `json:"kind"`
	LostAfter       time.Duration `json:"lostAfter,omitempty"`
	CPURatio        float64       `json:"cpuRatio,omitempty"`
	MemoryRatio     float64       `json:"memoryRatio,omitempty"`
	DiskRatio       float64       `json:"diskRatio,omitempty"`
	WorkloadNetwork string        `json:"workloadNetwork,omitempty"`
	IdempotencyKey  string        `json:"-"`
}

// PoolResult is a pool as written, and the position of its event.
type PoolResult struct {
	ID          string  `json:"id"`
	SiteID      string  `json:"siteId"`
	Kind        string  `json:"kind"`
	CPURatio    float64 `json:"cpuRatio"`
	MemoryRatio float64 `json:"memoryRatio"`
	DiskRatio   float64 `json:"diskRatio"`
	// WorkloadNetwork is the pool's network mode (WorkloadNetworkNone,
	// WorkloadNetworkBridge or WorkloadNetworkHost).
	WorkloadNetwork string          `json:"workloadNetwork"`
	Version         int64           `json:"version"`
	Position        outbox.Position `json:"position"`
}

func orOne(r float64) float64 {
	if r == 0 {
		return 1
	}
	return r
}

// validate refuses a pool that could not be created, before its key is
// claimed, and answers its workload network with the default filled in.
func (cmd CreatePool) validate() (string, error) {
	if err := core.ValidPoolID(cmd.ID); err != nil {
		return "", err
	}
	switch cmd.Kind {
	case PoolBareMetal, PoolProvider, PoolVPSHost:
	default:
		return "", core.Errorf(core.CodeInvalidArgument, "pool kind %q is not bare-metal, provider or vps-host", cmd.Kind)
	}
	if cmd.LostAfter != 0 && cmd.Kind == PoolBareMetal {
		return "", core.Errorf(core.CodeInvalidArgument, "a bare-metal pool cannot set lostAfter: bare metal is never lost automatically")
	}
	network := cmd.WorkloadNetwork
	switch network {
	case "":
		network = WorkloadNetworkNone
	case WorkloadNetworkNone, WorkloadNetworkBridge, WorkloadNetworkHost:
	default:
		return "", core.Errorf(core.CodeInvalidArgument,
			"workloadNetwork %q is not none, bridge or host", cmd.WorkloadNetwork)
	}
	if cmd.LostAfter < 0 {
		return "", core.Errorf(core.CodeInvalidArgument, "lostAfter must be positive")
	}
	return network, nil
}

// CreatePool runs pools.create (operator only).
func (h *Handlers) CreatePool(ctx context.Context, actor core.Actor, cmd CreatePool) (PoolResult, error) {
	if err := requireOperator(actor, "pools.create"); err != nil {
		return PoolResult{}, err
	}
	network, err := cmd.validate()
	if err != nil {
		return PoolResult{}, keyReusedFirst(ctx, h, actor, cmd.IdempotencyKey, "pools.create", cmd, err)
	}
	var lostAfter *int32
	if cmd.LostAfter > 0 {
		s := int32(cmd.LostAfter.Seconds())
		lostAfter = &s
	}
	res, err := idempotent(ctx, h, actor, cmd.IdempotencyKey, "pools.create", cmd,
		func(ctx context.Context, tx pgx.Tx) (PoolResult, error) {
			q := db.New(tx)
			p, err := q.PoolCreate(ctx, db.PoolCreateParams{
				ID: cmd.ID, SiteID: cmd.SiteID, Kind: cmd.Kind, LostAfterSeconds: lostAfter,
				CpuRatio: orOne(cmd.CPURatio), MemoryRatio: orOne(cmd.MemoryRatio), DiskRatio: orOne(cmd.DiskRatio),
				WorkloadNetwork: network,
			})
			if err != nil {
				return PoolResult{}, pg.Translate(err, "pool "+cmd.ID)
			}
			pos, err := emit(ctx, q, core.EventPoolCreated, "", core.PoolSubject(p.ID), core.PoolEventData{
				ID: p.ID, SiteID: p.SiteID, Kind: p.Kind, Version: p.Version,
				CPURatio: p.CpuRatio, MemoryRatio: p.MemoryRatio, DiskRatio: p.DiskRatio,
				WorkloadNetwork: p.WorkloadNetwork,
			})
			return PoolResult{ID: p.ID, SiteID: p.SiteID, Kind: p.Kind, CPURatio: p.CpuRatio,
				MemoryRatio: p.MemoryRatio, DiskRatio: p.DiskRatio, WorkloadNetwork: p.WorkloadNetwork,
				Version: p.Version, Position: pos}, err
		})
	if err != nil {
		return PoolResult{}, fmt.Errorf("create pool %s: %w", cmd.ID, err)
	}
	return res, nil
}
