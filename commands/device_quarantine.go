package commands

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// QuarantineDevice takes a GPU (and so all its atoms) out of placement
// (quarantine) or puts it back (unquarantine). Existing bookings stay: an
// operator releases them if the GPU is really broken.
type QuarantineDevice struct {
	DeviceID  string
	IfVersion int64 // 0: no version check
}

// DeviceResult is a GPU's status, its version and the position of the last
// event written.
type DeviceResult struct {
	ID          string          `json:"id"`
	Mode        core.GPUMode    `json:"mode"`
	Health      string          `json:"health"`
	Quarantined bool            `json:"quarantined"`
	Version     int64           `json:"version"`
	Position    outbox.Position `json:"position"`
}

// Device health values.
const (
	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"
)

// QuarantineDevice runs devices.quarantine (operator only).
func (h *Handlers) QuarantineDevice(ctx context.Context, actor core.Actor, cmd QuarantineDevice) (DeviceResult, error) {
	return h.changeDeviceStatus(ctx, actor, "devices.quarantine", cmd.DeviceID, cmd.IfVersion,
		func(g *db.DeviceListGPUForUpdateRow) (string, bool) {
			if g.Quarantined {
				return "", false
			}
			g.Quarantined = true
			return core.EventDeviceQuarantined, true
		})
}

// UnquarantineDevice runs devices.unquarantine (operator only).
func (h *Handlers) UnquarantineDevice(ctx context.Context, actor core.Actor, cmd QuarantineDevice) (DeviceResult, error) {
	return h.changeDeviceStatus(ctx, actor, "devices.unquarantine", cmd.DeviceID, cmd.IfVersion,
		func(g *db.DeviceListGPUForUpdateRow) (string, bool) {
			if !g.Quarantined {
				return "", false
			}
			g.Quarantined = false
			return core.EventDeviceUnquarantined, true
		})
}

// changeDeviceStatus locks the GPU's node FOR SHARE and refuses a retired
// one (node_retired.go), locks the GPU row FOR UPDATE (the placer holds it
// FOR SHARE while booking any of its atoms, so a quarantine serialises with
// placements: rule 4), edits it, writes it with a version guard and appends
// the event. A change that changes nothing is a no-op without an event.
func (h *Handlers) changeDeviceStatus(ctx context.Context, actor core.Actor, command, gpuID string, ifVersion int64,
	change func(g *db.DeviceListGPUForUpdateRow) (string, bool)) (DeviceResult, error) {
	if err := requireOperator(actor, command); err != nil {
		return DeviceResult{}, err
	}
	var res DeviceResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		if err := lockNodeOfDevice(ctx, q, gpuID); err != nil {
			return err
		}
		g, err := lockGPU(ctx, q, gpuID)
		if err != nil {
			return err
		}
		if err := checkVersion(ifVersion, g.Version, "GPU "+gpuID); err != nil {
			return err
		}
		res = deviceResult(g)
		typ, changed := change(&g)
		if !changed {
			return nil
		}
		rows, err := q.DeviceUpdateStatus(ctx, db.DeviceUpdateStatusParams{ID: g.ID, Version: g.Version,
			Health: g.Health, Quarantined: g.Quarantined})
		if err := zeroRowsConflict(rows, err, "GPU "+gpuID); err != nil {
			return err
		}
		if err := bumpGeneration(ctx, q, g.NodeID); err != nil { // a change of the node's desired spec
			return err
		}
		g.Version++
		res = deviceResult(g)
		res.Position, err = emit(ctx, q, typ, "", core.DeviceSubject(g.ID), core.DeviceStatusEventData{
			ID: g.ID, NodeID: g.NodeID, Health: g.Health, Quarantined: g.Quarantined, Version: g.Version})
		return err
	})
	if err != nil {
		return DeviceResult{}, fmt.Errorf("%s %s: %w", command, gpuID, err)
	}
	return res, nil
}

// lockGPU locks a GPU row FOR UPDATE. Quarantine, health and mode apply to
// whole GPUs: an atom's id is refused, naming its GPU.
func lockGPU(ctx context.Context, q *db.Queries, gpuID string) (db.DeviceListGPUForUpdateRow, error) {
	rows, err := q.DeviceListGPUForUpdate(ctx, gpuID)
	if err != nil {
		return db.DeviceListGPUForUpdateRow{}, pg.Translate(err, "GPU "+gpuID)
	}
	if len(rows) == 0 {
		d, err := q.DeviceGet(ctx, gpuID)
		if err == nil && d.ParentID != nil {
			return db.DeviceListGPUForUpdateRow{}, core.Errorf(core.CodeInvalidArgument,
				"%s is an atom of GPU %s; this applies to whole GPUs", gpuID, *d.ParentID)
		}
		return db.DeviceListGPUForUpdateRow{}, core.Errorf(core.CodeNotFound, "GPU %s not found", gpuID)
	}
	if rows[0].ParentID != nil {
		return db.DeviceListGPUForUpdateRow{}, core.Errorf(core.CodeInvalidArgument,
			"%s is an atom of GPU %s; this applies to whole GPUs", gpuID, *rows[0].ParentID)
	}
	if rows[0].ID != gpuID || rows[0].Kind != string(core.AtomGPU) {
		return db.DeviceListGPUForUpdateRow{}, core.Errorf(core.CodeNotFound, "GPU %s not found", gpuID)
	}
	return rows[0], nil
}

func deviceResult(g db.DeviceListGPUForUpdateRow) DeviceResult {
	r := DeviceResult{ID: g.ID, Health: g.Health, Quarantined: g.Quarantined, Version: g.Version}
	if g.Mode != nil {
		r.Mode = core.GPUMode(*g.Mode)
	}
	return r
}
