package commands

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// SetGPUMode changes how a GPU is shared: exclusive, a MIG layout, or N
// time-slice or MPS slots.
type SetGPUMode struct {
	GPUID     string
	Layout    core.GPULayout
	IfVersion int64 // 0: no version check
}

// SetGPUMode runs gpus.setMode (operator only). The atom rule: it books
// every atom of the GPU, parent included, from now on (the change window is
// open-ended, because a booking next week on an atom that disappears would be
// orphaned), so the change commits only when nothing on the GPU is booked now
// or later. The probe bookings are removed before commit; the GPU and atom
// rows it holds FOR UPDATE make placers wait and then see the new layout.
// Old atoms are retired, not deleted, because past bookings refer to them.
// A GPU of a retired node is refused, a repeat of its layout included
// (node_retired.go). A MIG layout on a GPU that cannot make it (no MIG, or
// fewer compute slices) is refused (core.GPULayout.CheckMIGSupport).
func (h *Handlers) SetGPUMode(ctx context.Context, actor core.Actor, cmd SetGPUMode) (DeviceResult, error) {
	if err := requireOperator(actor, "gpus.setMode"); err != nil {
		return DeviceResult{}, err
	}
	var res DeviceResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		if err := lockNodeOfDevice(ctx, q, cmd.GPUID); err != nil {
			return err
		}
		rows, err := q.DeviceListGPUForUpdate(ctx, cmd.GPUID)
		if err != nil {
			return pg.Translate(err, "GPU "+cmd.GPUID)
		}
		if len(rows) == 0 || rows[0].ID != cmd.GPUID || rows[0].Kind != string(core.AtomGPU) {
			_, err := lockGPU(ctx, q, cmd.GPUID) // for the precise error
			if err == nil {
				err = core.Errorf(core.CodeNotFound, "GPU %s not found", cmd.GPUID)
			}
			return err
		}
		g := rows[0]
		if err := checkVersion(cmd.IfVersion, g.Version, "GPU "+g.ID); err != nil {
			return err
		}
		atoms, err := cmd.Layout.Atoms(g.ID, g.MemoryMb)
		if err != nil {
			return err
		}
		// Read with the row locked: an inventory that records the GPU's
		// MIG support (DeviceSetMIGCapable) waits for this change or
		// comes before it.
		if err := cmd.Layout.CheckMIGSupport(g.ID, g.Model, g.MigCapable); err != nil {
			return err
		}
		res = deviceResult(g)
		if sameLayout(rows, cmd.Layout, atoms) {
			return nil
		}
		if err := planBookingLookupsNow(ctx, tx); err != nil {
			return err
		}
		probe := "mode-change:" + uuid.NewString()
		for _, d := range rows { // id order: the order every booker uses
			n, err := q.DeviceBookingProbeFromNow(ctx, db.DeviceBookingProbeFromNowParams{DeviceID: d.ID, AllocationID: probe})
			if pg.IsExclusionViolation(err) {
				n, err = 0, nil
			}
			if err != nil {
				return pg.Translate(err, "GPU "+g.ID)
			}
			if n == 0 {
				return core.Errorf(core.CodeConflict,
					"GPU %s cannot change mode: %s is booked now or later; release its reservations first", g.ID, d.ID)
			}
		}
		if _, err := q.DeviceBookingDeleteByAllocation(ctx, probe); err != nil {
			return pg.Translate(err, "GPU "+g.ID)
		}
		mode := string(cmd.Layout.Mode)
		n, err := q.DeviceUpdateMode(ctx, db.DeviceUpdateModeParams{ID: g.ID, Version: g.Version, Mode: &mode})
		if err := zeroRowsConflict(n, err, "GPU "+g.ID); err != nil {
			return err
		}
		if _, err := q.DeviceRetireAtoms(ctx, &g.ID); err != nil {
			return pg.Translate(err, "GPU "+g.ID)
		}
		migUUIDs := migUUIDsOfLayout(rows, atoms)
		for _, a := range atoms {
			if err := q.DeviceUpsertAtom(ctx, db.DeviceUpsertAtomParams{ID: a.ID, ParentID: &g.ID, NodeID: g.NodeID,
				Kind: string(a.Kind), Model: g.Model, MemoryMb: a.MemoryMB, Profile: &a.Profile,
				MigUuid: migUUIDs[a.ID]}); err != nil {
				return pg.Translate(err, "atom "+a.ID)
			}
		}
		g.Mode, g.Version = &mode, g.Version+1
		res = deviceResult(g)
		ids := make([]string, len(atoms))
		for i, a := range atoms {
			ids[i] = a.ID
		}
		res.Position, err = emit(ctx, q, core.EventGPUModeChanged, "", core.DeviceSubject(g.ID), core.GPUModeChangedEventData{
			ID: g.ID, NodeID: g.NodeID, Layout: cmd.Layout, Atoms: ids, Version: g.Version})
		return err
	})
	if err != nil {
		return DeviceResult{}, fmt.Errorf("gpus.setMode %s: %w", cmd.GPUID, err)
	}
	return res, nil
}

// sameLayout reports whether the GPU already has exactly this layout, so
// that repeating a mode change is a no-op.
func sameLayout(rows []db.DeviceListGPUForUpdateRow, l core.GPULayout, atoms []core.Atom) bool {
	if rows[0].Mode == nil || *rows[0].Mode != string(l.Mode) {
		return false
	}
	var live []string
	for _, d := range rows[1:] {
		if !d.Retired && d.Profile != nil {
			live = append(live, d.ID+"="+*d.Profile)
		}
	}
	want := make([]string, len(atoms))
	for i, a := range atoms {
		want[i] = a.ID + "=" + a.Profile
	}
	slices.Sort(live)
	slices.Sort(want)
	return slices.Equal(live, want)
}
