package projections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
)

// Fleet projects the fleet per pool: pools and their overcommit ratios,
// nodes with cordon, taints, liveness state, no-schedule reasons and
// conditions, GPUs and their atoms with mode, health and
// quarantine, and what each placed reservation holds (rm_fleet_allocations),
// from which node and pool utilization are summed at query time.
type Fleet struct{}

// ID is the sink id and projection name.
func (Fleet) ID() string { return NameFleet }

// Tables are the tables this projection owns.
func (Fleet) Tables() []string {
	return []string{"rm_fleet_pools", "rm_fleet_nodes", "rm_fleet_devices", "rm_fleet_allocations"}
}

// Apply writes each fleet or reservation event of the batch in tx.
func (Fleet) Apply(ctx context.Context, tx pgx.Tx, events []outbox.Stored) error {
	q := db.New(tx)
	return applyEach(events, func(e outbox.Stored) error {
		switch e.Type {
		case core.EventPoolCreated:
			return applyPool(ctx, q, e)
		case core.EventNodeRegistered:
			return applyNodeRegistered(ctx, q, e)
		case core.EventNodeCordoned, core.EventNodeUncordoned, core.EventNodeTainted, core.EventNodeUntainted:
			return applyNodeScheduling(ctx, q, e)
		case core.EventNodeConnected, core.EventNodeDisconnected, core.EventNodeUnreachable, core.EventNodeLost,
			core.EventNodeDraining, core.EventNodeUndrained, core.EventNodeRetired, core.EventNodeInventoryReconciled:
			return applyNodeStatus(ctx, q, e)
		case core.EventGPURegistered:
			return applyGPURegistered(ctx, q, e)
		case core.EventGPUModeChanged:
			return applyGPUModeChanged(ctx, q, e)
		case core.EventDeviceQuarantined, core.EventDeviceUnquarantined, core.EventDeviceHealthChanged:
			return applyDeviceStatus(ctx, q, e)
		}
		if reservationEventTypes[e.Type] {
			return applyAllocation(ctx, q, e)
		}
		return nil
	})
}

func applyPool(ctx context.Context, q *db.Queries, e outbox.Stored) error {
	p, err := decode[struct {
		ID          string  `json:"id"`
		SiteID      string  `json:"siteId"`
		Kind        string  `json:"kind"`
		CPURatio    float64 `json:"cpuRatio"`
		MemoryRatio float64 `json:"memoryRatio"`
		DiskRatio   float64 `json:"diskRatio"`
		// WorkloadNetwork is absent from events written before pools
		// had one: none.
		WorkloadNetwork string `json:"workloadNetwork"`
		Version         int64  `json:"version"`
	}](e)
	if err != nil {
		return err
	}
	if p.WorkloadNetwork == "" {
		p.WorkloadNetwork = "none"
	}
	_, err = q.RmFleetPoolApply(ctx, db.RmFleetPoolApplyParams{ID: p.ID, SiteID: p.SiteID, Kind: p.Kind,
		CpuRatio: p.CPURatio, MemoryRatio: p.MemoryRatio, DiskRatio: p.DiskRatio, WorkloadNetwork: p.WorkloadNetwork,
		Version: p.Version})
	return err
}

func applyNodeRegistered(ctx context.Context, q *db.Queries, e outbox.Stored) error {
	n, err := decode[struct {
		ID       string   `json:"id"`
		PoolID   string   `json:"poolId"`
		Cordoned bool     `json:"cordoned"`
		Taints   []string `json:"taints"`
		VCPU     int64    `json:"vcpu"`
		MemoryMB int64    `json:"memoryMb"`
		DiskGB   int64    `json:"diskGb"`
		Version  int64    `json:"version"`
	}](e)
	if err != nil {
		return err
	}
	_, err = q.RmFleetNodeRegister(ctx, db.RmFleetNodeRegisterParams{ID: n.ID, PoolID: n.PoolID, Cordoned: n.Cordoned,
		Taints: nonNil(n.Taints), Vcpu: n.VCPU, MemoryMb: n.MemoryMB, DiskGb: n.DiskGB, Version: n.Version,
		At: e.Time, Txid: e.Position.TxID, Seq: e.Position.Seq})
	return err
}

func applyNodeScheduling(ctx context.Context, q *db.Queries, e outbox.Stored) error {
	n, err := decode[struct {
		ID       string   `json:"id"`
		Cordoned bool     `json:"cordoned"`
		Taints   []string `json:"taints"`
		Version  int64    `json:"version"`
	}](e)
	if err != nil {
		return err
	}
	_, err = q.RmFleetNodeUpdateScheduling(ctx, db.RmFleetNodeUpdateSchedulingParams{ID: n.ID, Cordoned: n.Cordoned,
		Taints: nonNil(n.Taints), Version: n.Version, At: e.Time, Txid: e.Position.TxID, Seq: e.Position.Seq})
	return err
}

// applyNodeStatus writes a node's liveness state, no-schedule reasons and
// conditions from the events that change them (liveness, drain, retire,
// inventory); each writes what it carries and the node's new version.
func applyNodeStatus(ctx context.Context, q *db.Queries, e outbox.Stored) error {
	n, err := decode[struct {
		ID                string          `json:"id"`
		State             *string         `json:"state"`
		NoScheduleReasons *[]string       `json:"noScheduleReasons"`
		Conditions        json.RawMessage `json:"conditions"`
		Version           int64           `json:"version"`
	}](e)
	if err != nil {
		return err
	}
	var reasons []string
	if n.NoScheduleReasons != nil {
		reasons = nonNil(*n.NoScheduleReasons)
	}
	var conds []byte
	if len(n.Conditions) > 0 && string(n.Conditions) != "null" {
		conds = n.Conditions
	}
	_, err = q.RmFleetNodeUpdateStatus(ctx, db.RmFleetNodeUpdateStatusParams{ID: n.ID, State: n.State,
		NoScheduleReasons: reasons, Conditions: conds, Version: n.Version, At: e.Time, Txid: e.Position.TxID,
		Seq: e.Position.Seq})
	return err
}

// gpuData is the data of gpu.registered and gpu.mode_changed.
type gpuData struct {
	ID      string         `json:"id"`
	NodeID  string         `json:"nodeId"`
	Model   string         `json:"model"`
	Layout  core.GPULayout `json:"layout"`
	Health  string         `json:"health"`
	Version int64          `json:"version"`
	// Quarantined is only in gpu.registered.
	Quarantined bool `json:"quarantined"`
}

// anyMemoryMB stands for the GPU's memory when deriving atom ids from a
// layout: events do not carry the memory, ids and profiles do not depend on
// it, and the layout was validated when the command ran.
const anyMemoryMB = 1 << 40

func applyGPURegistered(ctx context.Context, q *db.Queries, e outbox.Stored) error {
	g, err := decode[gpuData](e)
	if err != nil {
		return err
	}
	node, err := q.RmFleetNodeGet(ctx, g.NodeID)
	if err != nil {
		return fmt.Errorf("node %s of GPU %s: %w", g.NodeID, g.ID, err)
	}
	mode := string(g.Layout.Mode)
	n, err := q.RmFleetDeviceRegisterGPU(ctx, db.RmFleetDeviceRegisterGPUParams{ID: g.ID, NodeID: g.NodeID,
		PoolID: node.PoolID, Model: g.Model, Mode: &mode, Health: g.Health, Quarantined: g.Quarantined, Version: g.Version})
	if err != nil || n == 0 {
		return err // n == 0: already applied
	}
	return writeAtoms(ctx, q, g, node.PoolID)
}

func applyGPUModeChanged(ctx context.Context, q *db.Queries, e outbox.Stored) error {
	g, err := decode[gpuData](e)
	if err != nil {
		return err
	}
	mode := string(g.Layout.Mode)
	n, err := q.RmFleetDeviceSetMode(ctx, db.RmFleetDeviceSetModeParams{ID: g.ID, Mode: &mode, Version: g.Version})
	if err != nil || n == 0 {
		return err // n == 0: already applied
	}
	gpu, err := q.RmFleetDeviceGet(ctx, g.ID)
	if err != nil {
		return fmt.Errorf("GPU %s: %w", g.ID, err)
	}
	g.Model = gpu.Model
	return writeAtoms(ctx, q, g, gpu.PoolID)
}

// writeAtoms makes the GPU's atoms exactly those of its layout: new ones
// written, others retired.
func writeAtoms(ctx context.Context, q *db.Queries, g gpuData, poolID string) error {
	atoms, err := g.Layout.Atoms(g.ID, anyMemoryMB)
	if err != nil {
		return fmt.Errorf("layout of GPU %s: %w", g.ID, err)
	}
	keep := make([]string, len(atoms))
	for i, a := range atoms {
		keep[i] = a.ID
		if err := q.RmFleetDeviceUpsertAtom(ctx, db.RmFleetDeviceUpsertAtomParams{ID: a.ID, NodeID: g.NodeID,
			PoolID: poolID, ParentID: g.ID, Kind: string(a.Kind), Model: g.Model, Profile: a.Profile,
			Version: g.Version}); err != nil {
			return fmt.Errorf("atom %s: %w", a.ID, err)
		}
	}
	return q.RmFleetDeviceRetireAtoms(ctx, db.RmFleetDeviceRetireAtomsParams{ParentID: g.ID, Keep: keep})
}

func applyDeviceStatus(ctx context.Context, q *db.Queries, e outbox.Stored) error {
	d, err := decode[struct {
		ID          string `json:"id"`
		Health      string `json:"health"`
		Quarantined bool   `json:"quarantined"`
		Version     int64  `json:"version"`
	}](e)
	if err != nil {
		return err
	}
	_, err = q.RmFleetDeviceSetStatus(ctx, db.RmFleetDeviceSetStatusParams{ID: d.ID, Health: d.Health,
		Quarantined: d.Quarantined, Version: d.Version})
	return err
}

// applyAllocation records what a placed reservation holds; a reservation
// that was never placed holds nothing and has no row.
func applyAllocation(ctx context.Context, q *db.Queries, e outbox.Stored) error {
	r, err := decodeReservation(e)
	if err != nil || !r.placed() {
		return err
	}
	poolID, err := placedPool(ctx, q, r)
	if err != nil {
		return err
	}
	vcpu, mem, disk, err := scalarsOf(ctx, q, r)
	if err != nil {
		return err
	}
	_, err = q.RmFleetAllocationApply(ctx, db.RmFleetAllocationApplyParams{ReservationID: r.ID, TenantID: r.Tenant,
		NodeID: r.NodeID, PoolID: poolID, DeviceIds: r.DeviceIDs, Vcpu: vcpu, MemoryMb: mem, DiskGb: disk,
		Live: core.ReservationHoldsCapacity(r.State), Version: r.Version})
	return err
}

// placedPool is the pool of the node a reservation was placed on.
func placedPool(ctx context.Context, q *db.Queries, r reservationData) (string, error) {
	if r.PlacedPoolID != "" {
		return r.PlacedPoolID, nil
	}
	n, err := q.RmFleetNodeGet(ctx, r.NodeID)
	if err != nil {
		return "", fmt.Errorf("node %s of reservation %s: %w", r.NodeID, r.ID, err)
	}
	return n.PoolID, nil
}

// scalarsOf is the vCPU, memory (MB) and disk (GB) a reservation holds:
// from its event when the event carries them, else from the reservation's
// spec in the write model, which never changes after creation (so a replay
// reads the same values). See the package comment.
func scalarsOf(ctx context.Context, q *db.Queries, r reservationData) (int64, int64, int64, error) {
	if r.VCPU != nil && r.MemoryMB != nil && r.DiskGB != nil {
		return *r.VCPU, *r.MemoryMB, *r.DiskGB, nil
	}
	s, err := q.RmFleetAllocationScalarsOf(ctx, r.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, 0, nil
	}
	if err != nil {
		return 0, 0, 0, fmt.Errorf("scalars of reservation %s: %w", r.ID, err)
	}
	return s.Vcpu, s.MemoryMb, s.DiskGb, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
