package projections

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
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

// Apply writes each fleet or reservation event of the batch in tx. The
// allocation writes that need no read of the model are queued and go out
// together, in one round trip, before any statement that reads and at the
// end, so the statements run in the events' order.
func (Fleet) Apply(ctx context.Context, tx pgx.Tx, events []outbox.Stored) error {
	q := db.New(tx)
	var queued pg.Batch
	send := func() error {
		if err := queued.Send(ctx, tx); err != nil {
			return fmt.Errorf("allocations: %w", err)
		}
		queued = pg.Batch{}
		return nil
	}
	err := applyEach(events, func(e outbox.Stored) error {
		if reservationEventTypes[e.Type] {
			return applyAllocation(ctx, q, e, &queued, send)
		}
		if err := send(); err != nil {
			return err
		}
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
		return nil
	})
	if err != nil {
		return err
	}
	return send()
}

// Seed fills the fleet tables from the write model at the start of a
// rebuild (Seeder): pools, nodes, GPUs with their atoms, and what every
// placed reservation holds, each at its aggregate's version, so that a
// rebuild after retention pruned the registrations still has every node
// and GPU. One statement per table: each reads one snapshot, in which a
// row's aggregate and the event at its version are both there or both not.
func (Fleet) Seed(ctx context.Context, tx pgx.Tx) error {
	q := db.New(tx)
	for _, s := range []struct {
		table string
		seed  func(context.Context) error
	}{
		{"rm_fleet_pools", q.RmFleetPoolSeed},
		{"rm_fleet_nodes", q.RmFleetNodeSeed},
		{"rm_fleet_devices", q.RmFleetDeviceSeed},
		{"rm_fleet_allocations", q.RmFleetAllocationSeed},
	} {
		if err := s.seed(ctx); err != nil {
			return fmt.Errorf("seed %s: %w", s.table, err)
		}
	}
	return nil
}

func applyPool(ctx context.Context, q *db.Queries, e outbox.Stored) error {
	p, err := decode[core.PoolEventData](e)
	if err != nil {
		return err
	}
	if p.WorkloadNetwork == "" { // an event written before pools had one
		p.WorkloadNetwork = "none"
	}
	_, err = q.RmFleetPoolApply(ctx, db.RmFleetPoolApplyParams{ID: p.ID, SiteID: p.SiteID, Kind: p.Kind,
		CpuRatio: p.CPURatio, MemoryRatio: p.MemoryRatio, DiskRatio: p.DiskRatio, WorkloadNetwork: p.WorkloadNetwork,
		Version: p.Version})
	return err
}

func applyNodeRegistered(ctx context.Context, q *db.Queries, e outbox.Stored) error {
	n, err := decode[core.NodeRegisteredEventData](e)
	if err != nil {
		return err
	}
	_, err = q.RmFleetNodeRegister(ctx, db.RmFleetNodeRegisterParams{ID: n.ID, PoolID: n.PoolID, Cordoned: n.Cordoned,
		Taints: nonNil(n.Taints), Vcpu: n.VCPU, MemoryMb: n.MemoryMB, DiskGb: n.DiskGB, Version: n.Version,
		At: e.Time, Txid: e.Position.TxID, Seq: e.Position.Seq})
	return err
}

func applyNodeScheduling(ctx context.Context, q *db.Queries, e outbox.Stored) error {
	n, err := decode[core.NodeSchedulingEventData](e)
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
	n, err := decodeNodeStatus(e)
	if err != nil {
		return err
	}
	var state *string
	if n.State != "" {
		s := string(n.State)
		state = &s
	}
	var conds []byte
	if n.Conditions != nil {
		if conds, err = json.Marshal(n.Conditions); err != nil {
			return fmt.Errorf("encode conditions of node %s: %w", n.ID, err)
		}
	}
	p := db.RmFleetNodeUpdateStatusParams{ID: n.ID, State: state,
		NoScheduleReasons: n.NoScheduleReasons, Conditions: conds, Version: n.Version, At: e.Time,
		Txid: e.Position.TxID, Seq: e.Position.Seq}
	if sc := n.Scalars; sc != nil {
		p.Vcpu, p.MemoryMb, p.DiskGb = &sc.VCPU, &sc.MemoryMB, &sc.DiskGB
	}
	if ps := n.PendingScalars; ps != nil {
		p.PendingKnown, p.VcpuPending, p.MemoryMbPending, p.DiskGbPending = true, ps.VCPU, ps.MemoryMB, ps.DiskGB
	}
	_, err = q.RmFleetNodeUpdateStatus(ctx, p)
	return err
}

// nodeStatus is what applyNodeStatus writes of a node: its state and
// version, and its no-schedule reasons, conditions, scalars and pending
// shrinks of them where the event carries them (nil: the row keeps its
// own).
type nodeStatus struct {
	ID                string
	State             core.State
	NoScheduleReasons []string
	Conditions        []core.NodeCondition
	Scalars           *core.NodeScalars
	PendingScalars    *core.NodePendingScalars
	Version           int64
}

// decodeNodeStatus reads a node event that changes the node's status
// through its core payload type.
func decodeNodeStatus(e outbox.Stored) (nodeStatus, error) {
	switch e.Type {
	case core.EventNodeDraining, core.EventNodeUndrained:
		d, err := decode[core.NodeDrainEventData](e)
		return nodeStatus{ID: d.ID, State: d.State, NoScheduleReasons: d.NoScheduleReasons, Version: d.Version}, err
	case core.EventNodeRetired:
		d, err := decode[core.NodeRetiredEventData](e)
		return nodeStatus{ID: d.ID, State: d.State, Version: d.Version}, err
	case core.EventNodeInventoryReconciled:
		d, err := decode[core.NodeInventoryReconciledEventData](e)
		return nodeStatus{ID: d.ID, State: d.State, NoScheduleReasons: d.NoScheduleReasons,
			Conditions: d.Conditions, Scalars: d.Scalars, PendingScalars: d.PendingScalars, Version: d.Version}, err
	default: // node.connected, node.disconnected, node.unreachable, node.lost: their common part
		d, err := decode[core.NodeLivenessEventData](e)
		return nodeStatus{ID: d.ID, State: d.State, NoScheduleReasons: d.NoScheduleReasons,
			Conditions: d.Conditions, Version: d.Version}, err
	}
}

// anyMemoryMB stands for the GPU's memory when deriving atom ids from a
// layout: events do not carry the memory, ids and profiles do not depend on
// it, and the layout was validated when the command ran.
const anyMemoryMB = 1 << 40

func applyGPURegistered(ctx context.Context, q *db.Queries, e outbox.Stored) error {
	g, err := decode[core.GPURegisteredEventData](e)
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
	return writeAtoms(ctx, q, g.ID, g.NodeID, node.PoolID, g.Model, g.Layout, g.Version)
}

func applyGPUModeChanged(ctx context.Context, q *db.Queries, e outbox.Stored) error {
	g, err := decode[core.GPUModeChangedEventData](e)
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
	return writeAtoms(ctx, q, g.ID, g.NodeID, gpu.PoolID, gpu.Model, g.Layout, g.Version)
}

// writeAtoms makes the atoms of GPU gpuID exactly those of its layout: new
// ones written, others retired, all of them at the layout's version.
func writeAtoms(ctx context.Context, q *db.Queries, gpuID, nodeID, poolID, model string, layout core.GPULayout,
	version int64) error {
	atoms, err := layout.Atoms(gpuID, anyMemoryMB)
	if err != nil {
		return fmt.Errorf("layout of GPU %s: %w", gpuID, err)
	}
	keep := make([]string, len(atoms))
	for i, a := range atoms {
		keep[i] = a.ID
		if err := q.RmFleetDeviceUpsertAtom(ctx, db.RmFleetDeviceUpsertAtomParams{ID: a.ID, NodeID: nodeID,
			PoolID: poolID, ParentID: gpuID, Kind: string(a.Kind), Model: model, Profile: a.Profile,
			Version: version}); err != nil {
			return fmt.Errorf("atom %s: %w", a.ID, err)
		}
	}
	return q.RmFleetDeviceRetireAtoms(ctx, db.RmFleetDeviceRetireAtomsParams{Version: version, ParentID: gpuID, Keep: keep})
}

func applyDeviceStatus(ctx context.Context, q *db.Queries, e outbox.Stored) error {
	d, err := decode[core.DeviceStatusEventData](e)
	if err != nil {
		return err
	}
	_, err = q.RmFleetDeviceSetStatus(ctx, db.RmFleetDeviceSetStatusParams{ID: d.ID, Health: d.Health,
		Quarantined: d.Quarantined, Version: d.Version})
	return err
}

// applyAllocation records what a placed reservation holds; a reservation
// that was never placed holds nothing and has no row. When the event says
// all the row needs, the write is queued in queued; otherwise send sends
// what is queued before the reads.
func applyAllocation(ctx context.Context, q *db.Queries, e outbox.Stored, queued *pg.Batch, send func() error) error {
	r, err := decodeReservation(e)
	if err != nil || !r.placed() {
		return err
	}
	if pool := cmp.Or(r.PlacedPoolID, r.PoolID); pool != "" && r.VCPU != nil && r.MemoryMB != nil && r.DiskGB != nil {
		pg.ExecRows(ctx, queued, (*db.Queries).RmFleetAllocationApply, db.RmFleetAllocationApplyParams{ReservationID: r.ID,
			TenantID: r.Tenant, NodeID: r.NodeID, PoolID: pool, DeviceIds: r.DeviceIDs, Vcpu: *r.VCPU,
			MemoryMb: *r.MemoryMB, DiskGb: *r.DiskGB, Live: core.ReservationHoldsCapacity(r.State), Version: r.Version}, nil)
		return nil
	}
	if err := send(); err != nil {
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

// placedPool is the pool of the node a reservation was placed on: the
// reservation's own pool when it named one (placement stays in it), else
// the node's pool in the fleet model.
func placedPool(ctx context.Context, q *db.Queries, r reservationData) (string, error) {
	switch {
	case r.PlacedPoolID != "":
		return r.PlacedPoolID, nil
	case r.PoolID != "":
		return r.PoolID, nil
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
