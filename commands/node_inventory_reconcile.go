package commands

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// HealthMissing is the health of a GPU the node's daemon does not report:
// out of placement (placement takes only healthy GPUs) until the daemon
// reports it again, when it is healthy again.
const HealthMissing = "missing"

// InventoryResult says what one inventory reconcile changed.
type InventoryResult struct {
	// Missing are recorded GPUs the daemon did not report that became
	// missing now; Returned are missing GPUs it reported again (healthy
	// again); Registered are reported GPUs the record lacked, registered
	// now (exclusive, healthy).
	Missing, Returned, Registered []string
	// Mismatched are reported GPUs that disagree with the record (model,
	// or memory by more than MemoryTolerance) or could not be registered;
	// they are in the GPUMismatch condition, changed or not.
	Mismatched []string
	// ScalarsAdopted are the scalars the daemon's configuration changed
	// ("vcpu 8 → 4"); ScalarsRefused those it configured that were kept,
	// with why (the ScalarsMismatch condition's message).
	ScalarsAdopted, ScalarsRefused []string
	// Conditions are the node's conditions after the reconcile.
	Conditions []NodeCondition
	// Changed is set when the reconcile wrote anything; Version is then the
	// node's new version and Position that of its node.inventory_reconciled.
	Changed  bool
	Version  int64
	Position outbox.Position
}

// ReconcileNodeInventory reconciles what a node's daemon reports, at
// session epoch, with the node's record, in one transaction fenced by that
// epoch (a report of a superseded or closed session is
// ErrSessionSuperseded and changes nothing). The machine decides what
// exists, the control plane who holds it:
//
//   - a recorded GPU the daemon does not report becomes missing (health
//     HealthMissing, device.health_changed): out of placement, its bookings
//     kept; the node's GPUMissing condition lists it;
//   - a missing GPU reported again becomes healthy (device.health_changed);
//   - a reported GPU the record lacks is registered, exclusive and healthy,
//     as RegisterNode does (gpu.registered); one recorded on another node is
//     not, and is a mismatch;
//   - a reported GPU whose model or memory differs from the record is a
//     mismatch: the GPUMismatch condition says how, and the record stays
//     (an operator decides: quarantine, or re-register the node).
//
// A GPU's sharing layout (MIG, slots) is the control plane's and is not
// reconciled; the MIG instances reported for a MIG GPU only name its atoms
// (recordMIGUUIDs). When anything changed, the node row's conditions are written
// with a version guard (the row the placer locks FOR SHARE) and
// node.inventory_reconciled carries the node's new version; a report that
// agrees with the record writes nothing.
//
// The daemon's configured scalars (vCPU, memory, disk), when it reports
// them, are adopted each where the node's live and future bookings still
// fit, by a guarded update of its counter and its pool's rollup; one that
// does not fit keeps the record and raises the ScalarsMismatch condition
// (reconcileScalars); a shrink refused so waits, pending, for the node's
// resync to adopt it once the bookings fit (retryPendingScalars). A change
// of scalars writes the node's version and node.inventory_reconciled
// carries them.
//
// Besides its GPUs, a daemon that refuses workloads (its WorkloadsRefused
// reason) raises the node's WorkloadsRefused condition with that reason,
// and a report without one clears it, in the same transaction and
// node.inventory_reconciled as the GPU conditions. The node stays in
// placement: the daemon takes assignments, it fails their workloads.
func (s NodeSessions) ReconcileNodeInventory(ctx context.Context, nodeID string, epoch int64, inv NodeInventory) (InventoryResult, error) {
	h := s.h
	gpus := inv.GPUs
	refused := boundedReason(inv.WorkloadsRefused, WorkloadsRefusedMaxBytes)
	var res InventoryResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		res = InventoryResult{}
		q := db.New(tx)
		n, err := q.NodeLivenessLock(ctx, nodeID)
		if err != nil {
			return pg.Translate(err, "node "+nodeID)
		}
		_, err = q.NodeSessionLockForDispatch(ctx, db.NodeSessionLockForDispatchParams{NodeID: nodeID, SessionEpoch: epoch})
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrSessionSuperseded
		}
		if err != nil {
			return pg.Translate(err, "node session")
		}
		now, err := q.NodeLivenessNow(ctx)
		if err != nil {
			return pg.Translate(err, "clock")
		}
		recorded, err := q.DeviceListNodeGPUsForUpdate(ctx, nodeID)
		if err != nil {
			return pg.Translate(err, "GPUs of node "+nodeID)
		}
		reported := map[string]ReportedGPU{}
		var order []string
		var mismatches []string
		if len(gpus) > core.MaxNodeGPUs {
			// No node has more: the rest is a daemon's bug or a flood, and
			// each entry would cost a registration or a mismatch in the
			// node's event.
			mismatches = append(mismatches, fmt.Sprintf("%d GPUs reported, a node has at most %d: the rest ignored",
				len(gpus), core.MaxNodeGPUs))
			gpus = gpus[:core.MaxNodeGPUs]
		}
		for _, g := range gpus {
			if err := core.ValidGPUUUID(g.UUID); err != nil {
				// Not a GPU's name: a daemon's bug, or one that would take
				// another GPU's atom id or write megabytes into the node's
				// conditions. Said once, cut short, and not looked at again.
				mismatches = append(mismatches, fmt.Sprintf("%q is not a GPU uuid; ignored", core.Clip(g.UUID, 64)))
				res.Mismatched = append(res.Mismatched, core.Clip(g.UUID, 64))
				continue
			}
			if _, dup := reported[g.UUID]; dup {
				mismatches = append(mismatches, fmt.Sprintf("%s reported twice", g.UUID))
				res.Mismatched = append(res.Mismatched, g.UUID)
				continue
			}
			reported[g.UUID] = g
			order = append(order, g.UUID)
		}
		slices.Sort(order)

		var missing []string
		var last outbox.Position
		known := map[string]bool{}
		for _, g := range recorded {
			known[g.ID] = true
			r, ok := reported[g.ID]
			want := g.Health
			switch {
			case !ok:
				missing = append(missing, g.ID)
				if g.Health != HealthMissing {
					want = HealthMissing
					res.Missing = append(res.Missing, g.ID)
				}
			case g.Health == HealthMissing:
				want = HealthHealthy
				res.Returned = append(res.Returned, g.ID)
			}
			if ok && r.MIGCapable != nil {
				if _, err := q.DeviceSetMIGCapable(ctx, db.DeviceSetMIGCapableParams{ID: g.ID, MigCapable: r.MIGCapable}); err != nil {
					return pg.Translate(err, "GPU "+g.ID)
				}
			}
			if ok {
				if why := gpuMismatch(g, r); why != "" {
					mismatches = append(mismatches, why)
					res.Mismatched = append(res.Mismatched, g.ID)
				}
			}
			if want == g.Health {
				continue
			}
			rows, err := q.DeviceUpdateStatus(ctx, db.DeviceUpdateStatusParams{ID: g.ID, Version: g.Version,
				Health: want, Quarantined: g.Quarantined})
			if err := zeroRowsConflict(rows, err, "GPU "+g.ID); err != nil {
				return err
			}
			reason := core.ConditionGPUMissing
			if want == HealthHealthy {
				reason = "GPUReported"
			}
			if last, err = emit(ctx, q, core.EventDeviceHealthChanged, "", core.DeviceSubject(g.ID), core.DeviceStatusEventData{
				ID: g.ID, NodeID: nodeID, Health: want, Quarantined: g.Quarantined, Version: g.Version + 1,
				Reason: reason}); err != nil {
				return err
			}
		}

		overCap := 0
		for _, id := range order {
			if known[id] {
				continue
			}
			if len(recorded)+len(res.Registered) >= core.MaxNodeGPUs {
				overCap++
				continue
			}
			g := reported[id]
			if g.UUID == "" || g.Model == "" || g.MemoryMB <= 0 {
				mismatches = append(mismatches, fmt.Sprintf("%q reported without a uuid, a model or memory; not registered", g.UUID))
				res.Mismatched = append(res.Mismatched, g.UUID)
				continue
			}
			if core.ValidGPUModel(g.Model) != nil {
				mismatches = append(mismatches, fmt.Sprintf("%s reported with model %q, not a GPU model's name; not registered",
					g.UUID, core.Clip(g.Model, 64)))
				res.Mismatched = append(res.Mismatched, g.UUID)
				continue
			}
			if d, err := q.DeviceGet(ctx, g.UUID); err == nil {
				mismatches = append(mismatches, fmt.Sprintf("%s is recorded on node %s; not registered here", g.UUID, d.NodeID))
				res.Mismatched = append(res.Mismatched, g.UUID)
				continue
			} else if !errors.Is(err, pgx.ErrNoRows) {
				return pg.Translate(err, "GPU "+g.UUID)
			}
			ev, err := insertGPU(ctx, q, nodeID, GPUInventory{UUID: g.UUID, Model: g.Model, MemoryMB: g.MemoryMB,
				Layout: core.GPULayout{Mode: core.GPUExclusive}}, nil)
			if err != nil {
				return err
			}
			if g.MIGCapable != nil {
				if _, err := q.DeviceSetMIGCapable(ctx, db.DeviceSetMIGCapableParams{ID: g.UUID, MigCapable: g.MIGCapable}); err != nil {
					return pg.Translate(err, "GPU "+g.UUID)
				}
			}
			if last, err = emit(ctx, q, core.EventGPURegistered, "", core.DeviceSubject(g.UUID), ev); err != nil {
				return err
			}
			res.Registered = append(res.Registered, g.UUID)
		}

		if overCap > 0 {
			mismatches = append(mismatches, fmt.Sprintf("%d more GPUs reported than a node may have (%d); not registered",
				overCap, core.MaxNodeGPUs))
		}

		if err := recordMIGUUIDs(ctx, q, nodeID, reported); err != nil {
			return err
		}

		var scalars scalarsReconcile
		if inv.Scalars != nil {
			if scalars, err = reconcileScalars(ctx, q, nodeID, n.PoolID, *inv.Scalars); err != nil {
				return err
			}
		} else {
			// A daemon that states no scalars withdraws a shrink or a value
			// out of range it stated before, as it clears the
			// ScalarsMismatch condition.
			cleared, err := q.NodeResourceClearRefused(ctx, nodeID)
			if err != nil {
				return pg.Translate(err, "scalars of node "+nodeID)
			}
			scalars.remembered = cleared > 0
		}
		res.ScalarsAdopted, res.ScalarsRefused = scalars.adopted, scalars.refused

		conds, err := decodeNodeConditions(n)
		if err != nil {
			return err
		}
		next := setNodeCondition(conds, core.ConditionGPUMissing, "NotReported",
			listMessage(missing, "not reported by the node's daemon; out of placement until it reports them"), now)
		next = setNodeCondition(next, core.ConditionGPUMismatch, "InventoryMismatch",
			core.Clip(strings.Join(mismatches, "; "), MismatchMaxBytes), now)
		next = setNodeCondition(next, core.ConditionWorkloadsRefused, "CannotIsolate", refused, now)
		reason, message := diskNotEnforced(inv.DiskLimit, refused)
		next = setNodeCondition(next, core.ConditionDiskNotEnforced, reason, message, now)
		next = setNodeCondition(next, core.ConditionScalarsMismatch, scalars.reason, scalars.message(), now)
		res.Conditions = next
		changed := len(res.Missing)+len(res.Returned)+len(res.Registered)+len(scalars.adopted) > 0 ||
			scalars.remembered || !sameConditions(conds, next)
		if !changed {
			return nil
		}
		reasons, err := writeNodeConditions(ctx, q, n, next)
		if err != nil {
			return err
		}
		res.Changed, res.Version = true, n.Version+1
		ev := core.NodeInventoryReconciledEventData{
			ID: n.ID, PoolID: n.PoolID, State: core.State(n.State), NoScheduleReasons: reasons, Conditions: next,
			Version: res.Version, SessionEpoch: epoch, Missing: nonNilStrings(res.Missing),
			Returned: nonNilStrings(res.Returned), Registered: nonNilStrings(res.Registered),
			Mismatched: nonNilStrings(res.Mismatched), PendingScalars: &scalars.pending}
		if len(scalars.adopted) > 0 {
			ev.Scalars = &scalars.after
		}
		last, err = emit(ctx, q, core.EventNodeInventoryReconciled, "", core.NodeSubject(n.ID), ev)
		res.Position = last
		return err
	})
	if err != nil {
		return InventoryResult{}, fmt.Errorf("inventory of node %s: %w", nodeID, err)
	}
	return res, nil
}

// recordMIGUUIDs records, for each MIG atom of a reported GPU, the UUID of
// the MIG instance the daemon reports for it (devices.mig_uuid, what an
// assignment makes visible). Atoms and instances pair by profile, in order:
// the k-th atom of a profile (by atom id) with the k-th instance of that
// profile (by its index). An atom without a matching instance has its UUID
// cleared; a GPU the daemon does not report keeps its atoms' UUIDs. An
// instance whose UUID is not a device's name (core.ValidMIGUUID) is
// ignored.
func recordMIGUUIDs(ctx context.Context, q *db.Queries, nodeID string, reported map[string]ReportedGPU) error {
	atoms, err := q.DeviceListNodeMIGAtoms(ctx, nodeID)
	if err != nil {
		return pg.Translate(err, "MIG atoms of node "+nodeID)
	}
	type key struct{ gpu, profile string }
	instances := map[key][]ReportedMIG{}
	for _, g := range reported {
		mig := slices.Clone(g.MIG)
		slices.SortFunc(mig, func(a, b ReportedMIG) int { return a.Index - b.Index })
		for _, m := range mig {
			if core.ValidMIGUUID(m.UUID) != nil {
				// Not a device's name: it would go into assignments'
				// CUDA_VISIBLE_DEVICES (a comma names a second device),
				// could be megabytes, or one PostgreSQL refuses (a NUL)
				// would fail the whole inventory. It names no atom.
				continue
			}
			k := key{g.UUID, m.Profile}
			instances[k] = append(instances[k], m)
		}
	}
	for _, a := range atoms {
		if _, ok := reported[a.ParentID]; !ok {
			continue
		}
		k := key{a.ParentID, a.Profile}
		var uuid *string
		if list := instances[k]; len(list) > 0 {
			uuid = &list[0].UUID
			instances[k] = list[1:]
		}
		if (uuid == nil) == (a.MigUuid == nil) && (uuid == nil || *uuid == *a.MigUuid) {
			continue
		}
		if err := q.DeviceSetMIGUUID(ctx, db.DeviceSetMIGUUIDParams{ID: a.ID, MigUuid: uuid}); err != nil {
			return pg.Translate(err, "atom "+a.ID)
		}
	}
	return nil
}

// listMessage is "a, b, c <what>", or "" for none.
func listMessage(ids []string, what string) string {
	if len(ids) == 0 {
		return ""
	}
	return strings.Join(ids, ", ") + " " + what
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
