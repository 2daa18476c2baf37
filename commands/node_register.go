package commands

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
)

// GPUInventory is one GPU a node reports: its UUID, model, memory and the
// layout it starts in.
type GPUInventory struct {
	UUID     string         `json:"uuid"`
	Model    string         `json:"model"`
	MemoryMB int64          `json:"memoryMb"`
	Layout   core.GPULayout `json:"layout"`
}

// RegisterNode adds a node and its inventory to a pool.
type RegisterNode struct {
	ID       string         `json:"id"`
	PoolID   string         `json:"poolId"`
	VCPU     int64          `json:"vcpu"`
	MemoryMB int64          `json:"memoryMb"`
	DiskGB   int64          `json:"diskGb"`
	Taints   []string       `json:"taints"`
	GPUs     []GPUInventory `json:"gpus"`
}

// NodeResult is a node's scheduling state, its version and the position of
// the last event written.
type NodeResult struct {
	ID       string          `json:"id"`
	PoolID   string          `json:"poolId"`
	Cordoned bool            `json:"cordoned"`
	Taints   []string        `json:"taints"`
	Version  int64           `json:"version"`
	Position outbox.Position `json:"position"`
}

// RegisterNode runs nodes.register (operator only): the node, its GPUs and
// their atoms, its counters, and its share of the pool's capacity rollup.
func (h *Handlers) RegisterNode(ctx context.Context, actor core.Actor, cmd RegisterNode) (NodeResult, error) {
	if err := requireOperator(actor, "nodes.register"); err != nil {
		return NodeResult{}, err
	}
	if err := core.ValidNodeID(cmd.ID); err != nil {
		return NodeResult{}, err
	}
	if cmd.PoolID == "" {
		return NodeResult{}, core.Errorf(core.CodeInvalidArgument, "poolId is required: the pool a new node joins")
	}
	if cmd.VCPU < 0 || cmd.MemoryMB < 0 || cmd.DiskGB < 0 {
		return NodeResult{}, core.Errorf(core.CodeInvalidArgument, "node resources cannot be negative")
	}
	if len(cmd.GPUs) > core.MaxNodeGPUs {
		return NodeResult{}, core.Errorf(core.CodeInvalidArgument, "%d GPUs: a node has at most %d", len(cmd.GPUs), core.MaxNodeGPUs)
	}
	atoms := make([][]core.Atom, len(cmd.GPUs))
	for i, g := range cmd.GPUs {
		if g.UUID == "" || g.Model == "" || g.MemoryMB <= 0 {
			return NodeResult{}, core.Errorf(core.CodeInvalidArgument, "GPU %d needs a uuid, a model and memory", i)
		}
		if err := core.ValidGPUUUID(g.UUID); err != nil {
			return NodeResult{}, err
		}
		if err := core.ValidGPUModel(g.Model); err != nil {
			return NodeResult{}, err
		}
		a, err := g.Layout.Atoms(g.UUID, g.MemoryMB)
		if err != nil {
			return NodeResult{}, err
		}
		// No daemon has reported these GPUs yet: their model decides.
		if err := g.Layout.CheckMIGSupport(g.UUID, g.Model, nil); err != nil {
			return NodeResult{}, err
		}
		atoms[i] = a
	}
	taints := normaliseTaints(cmd.Taints)
	var res NodeResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		pool, err := q.PoolGet(ctx, cmd.PoolID)
		if err != nil {
			return pg.Translate(err, "pool "+cmd.PoolID)
		}
		if _, err := q.PoolLockShare(ctx, cmd.PoolID); err != nil {
			return pg.Translate(err, "pool "+cmd.PoolID)
		}
		n, err := q.NodeCreate(ctx, db.NodeCreateParams{ID: cmd.ID, PoolID: cmd.PoolID, Taints: taints})
		if err != nil {
			return pg.Translate(err, "node "+cmd.ID)
		}
		var gpuEvents []core.GPURegisteredEventData
		for i, g := range cmd.GPUs {
			ev, err := insertGPU(ctx, q, n.ID, g, atoms[i])
			if err != nil {
				return err
			}
			gpuEvents = append(gpuEvents, ev)
		}
		for _, r := range []struct {
			name        string
			allocatable int64
			ratio       float64
		}{{core.ResourceDisk, cmd.DiskGB, pool.DiskRatio}, {core.ResourceMemory, cmd.MemoryMB, pool.MemoryRatio},
			{core.ResourceVCPU, cmd.VCPU, pool.CpuRatio}} {
			if err := q.NodeResourceCreate(ctx, db.NodeResourceCreateParams{NodeID: n.ID, Resource: r.name,
				Allocatable: r.allocatable, Ratio: r.ratio}); err != nil {
				return pg.Translate(err, "node resource "+r.name)
			}
		}
		if err := q.PoolCapacityRollupAddNode(ctx, n.ID); err != nil {
			return pg.Translate(err, "pool capacity")
		}
		// Its liveness clock starts now: a node that never joins becomes
		// unreachable NoSessionAfter after its registration.
		if !h.cfg.Test.NodesWithoutDaemons {
			if err := q.NodeSessionRegister(ctx, n.ID); err != nil {
				return pg.Translate(err, "node session")
			}
			if err := workqueue.Enqueue(ctx, q, KindNodeLiveness, n.ID, NoSessionAfter); err != nil {
				return err
			}
		}
		pos, err := emit(ctx, q, core.EventNodeRegistered, "", core.NodeSubject(n.ID), core.NodeRegisteredEventData{
			ID: n.ID, PoolID: n.PoolID, Cordoned: false, Taints: taints, Version: n.Version,
			VCPU: cmd.VCPU, MemoryMB: cmd.MemoryMB, DiskGB: cmd.DiskGB,
		})
		if err != nil {
			return err
		}
		for _, g := range gpuEvents {
			if pos, err = emit(ctx, q, core.EventGPURegistered, "", core.DeviceSubject(g.ID), g); err != nil {
				return err
			}
		}
		res = NodeResult{ID: n.ID, PoolID: n.PoolID, Taints: taints, Version: n.Version, Position: pos}
		return nil
	})
	if err != nil {
		return NodeResult{}, fmt.Errorf("register node %s: %w", cmd.ID, err)
	}
	return res, nil
}

// insertGPU writes one new GPU of a node and its atoms, and returns the
// data of its gpu.registered event (version 1). RegisterNode and the
// inventory reconcile (a GPU the daemon reports that the record lacks)
// share it.
func insertGPU(ctx context.Context, q *db.Queries, nodeID string, g GPUInventory, atoms []core.Atom) (core.GPURegisteredEventData, error) {
	mode := string(g.Layout.Mode)
	if err := q.DeviceCreate(ctx, db.DeviceCreateParams{ID: g.UUID, NodeID: nodeID, Kind: string(core.AtomGPU),
		Model: g.Model, MemoryMb: g.MemoryMB, Mode: &mode, Bookable: g.Layout.Mode == core.GPUExclusive}); err != nil {
		return core.GPURegisteredEventData{}, pg.Translate(err, "GPU "+g.UUID)
	}
	for _, a := range atoms {
		if err := q.DeviceUpsertAtom(ctx, db.DeviceUpsertAtomParams{ID: a.ID, ParentID: &g.UUID, NodeID: nodeID,
			Kind: string(a.Kind), Model: g.Model, MemoryMb: a.MemoryMB, Profile: &a.Profile}); err != nil {
			return core.GPURegisteredEventData{}, pg.Translate(err, "atom "+a.ID)
		}
	}
	return core.GPURegisteredEventData{ID: g.UUID, NodeID: nodeID, Model: g.Model,
		Layout: g.Layout, Health: HealthHealthy, Quarantined: false, Version: 1}, nil
}
