package commands

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
)

// CreateReservation asks for capacity in a pool or in any pool of a site,
// for the window [Start, End): GPUs atoms on one node (whole GPUs of a
// Model, MIG instances of a MIGProfile, or time-slice / MPS slots), plus
// vCPU, memory (MB) and disk (GB) on the same node.
type CreateReservation struct {
	PoolID         string       `json:"poolId,omitempty"`
	SiteID         string       `json:"siteId,omitempty"`
	GPUs           int          `json:"gpus"`
	GPUModel       string       `json:"gpuModel,omitempty"`
	MIGProfile     string       `json:"migProfile,omitempty"`
	SlotKind       core.GPUMode `json:"slotKind,omitempty"`
	VCPU           int64        `json:"vcpu"`
	MemoryMB       int64        `json:"memoryMb"`
	DiskGB         int64        `json:"diskGb"`
	Start          time.Time    `json:"start"`
	End            time.Time    `json:"end"`
	Tolerations    []string     `json:"tolerations,omitempty"`
	IdempotencyKey string       `json:"-"`
}

// spec validates the request and turns it into the stored spec.
func (c CreateReservation) spec() (core.ReservationSpec, error) {
	bad := func(f string, a ...any) (core.ReservationSpec, error) {
		return core.ReservationSpec{}, core.Errorf(core.CodeInvalidArgument, f, a...)
	}
	if (c.PoolID == "") == (c.SiteID == "") {
		return bad("a reservation names exactly one of poolId and siteId")
	}
	if c.GPUs < 0 || c.VCPU < 0 || c.MemoryMB < 0 || c.DiskGB < 0 {
		return bad("requested amounts cannot be negative")
	}
	if c.GPUs == 0 && c.VCPU == 0 && c.MemoryMB == 0 && c.DiskGB == 0 {
		return bad("a reservation must ask for something")
	}
	if c.Start.IsZero() || c.End.IsZero() || !c.End.After(c.Start) {
		return bad("a reservation needs a start and an end after it")
	}
	g := core.GPURequest{Count: c.GPUs, Model: c.GPUModel, Kind: core.AtomGPU}
	switch {
	case c.MIGProfile != "" && c.SlotKind != "":
		return bad("ask for MIG instances or slots, not both")
	case c.MIGProfile != "":
		if _, err := core.ParseMIGProfile(c.MIGProfile); err != nil {
			return core.ReservationSpec{}, err
		}
		g.Kind, g.MIGProfile = core.AtomMIG, c.MIGProfile
	case c.SlotKind != "":
		if c.SlotKind != core.GPUTimeSlice && c.SlotKind != core.GPUMPS {
			return bad("slotKind must be time-slice or mps")
		}
		g.Kind, g.SlotKind = core.AtomSlot, c.SlotKind
	}
	if c.GPUs == 0 && (c.MIGProfile != "" || c.SlotKind != "" || c.GPUModel != "") {
		return bad("a GPU model, MIG profile or slot kind needs gpus > 0")
	}
	return core.ReservationSpec{GPU: g, VCPU: c.VCPU, MemoryMB: c.MemoryMB, DiskGB: c.DiskGB,
		Tolerations: normaliseTaints(c.Tolerations)}, nil
}

// CreateReservation runs reservations.create for the actor's tenant. It
// charges quota first (final on failure), then places under savepoints;
// when no node fits after the attempts, the reservation is pending with an
// Unschedulable condition, keeps its charge and is retried every 30 s.
func (h *Handlers) CreateReservation(ctx context.Context, actor core.Actor, cmd CreateReservation) (ReservationResult, error) {
	if !actor.CanWrite() {
		return ReservationResult{}, core.Errorf(core.CodePermissionDenied, "reservations.create requires a member or operator role")
	}
	// PostgreSQL keeps microseconds: answer with the window as stored.
	cmd.Start, cmd.End = cmd.Start.Truncate(time.Microsecond), cmd.End.Truncate(time.Microsecond)
	spec, err := cmd.spec()
	if err != nil {
		return ReservationResult{}, err
	}
	res, err := idempotent(ctx, h, actor, cmd.IdempotencyKey, "reservations.create", cmd,
		func(ctx context.Context, tx pgx.Tx) (ReservationResult, error) {
			return h.createReservation(ctx, tx, actor, cmd, spec)
		})
	if err != nil {
		return ReservationResult{}, fmt.Errorf("reservations.create: %w", err)
	}
	return res, nil
}

func (h *Handlers) createReservation(ctx context.Context, tx pgx.Tx, actor core.Actor, cmd CreateReservation,
	spec core.ReservationSpec) (ReservationResult, error) {
	q := db.New(tx)
	now, err := q.ClockNow(ctx)
	if err != nil {
		return ReservationResult{}, pg.Translate(err, "clock")
	}
	start := cmd.Start
	if start.Before(now) {
		start = now // a window that already began is booked from now
	}
	if !cmd.End.After(start) {
		return ReservationResult{}, core.Errorf(core.CodeInvalidArgument, "the reservation's end %s has passed", cmd.End.UTC().Format(time.RFC3339))
	}
	pools := []string{cmd.PoolID}
	if cmd.SiteID != "" {
		if _, err := q.SiteGet(ctx, cmd.SiteID); err != nil {
			return ReservationResult{}, pg.Translate(err, "site "+cmd.SiteID)
		}
		if pools, err = q.PoolIDsBySite(ctx, cmd.SiteID); err != nil {
			return ReservationResult{}, pg.Translate(err, "pools of site "+cmd.SiteID)
		}
	} else if _, err := q.PoolGet(ctx, cmd.PoolID); err != nil {
		return ReservationResult{}, pg.Translate(err, "pool "+cmd.PoolID)
	}
	charges := quotaCharges(spec)
	// quota_usage first: lock what this request may charge, including every
	// per-model GPU quota of the tenant, which placement charges for the
	// model it lands on (see lockQuota).
	modelQuotas, err := lockQuota(ctx, q, actor.Tenant, charges, spec)
	if err != nil {
		return ReservationResult{}, err
	}
	if err := chargeQuota(ctx, q, actor.Tenant, charges); err != nil {
		return ReservationResult{}, err
	}
	id := "rsv_" + uuid.NewString()
	where, reasons, err := h.place(ctx, tx, placement{reservationID: id, poolIDs: pools, spec: spec, start: start,
		end: cmd.End, tenant: actor.Tenant, modelQuotas: modelQuotas, quotaFinal: true})
	if err != nil {
		return ReservationResult{}, err
	}
	if where != nil {
		maps.Copy(charges, where.modelCharges)
	}
	r := core.Reservation{ID: id, Tenant: actor.Tenant, State: core.ReservationBooked, PoolID: cmd.PoolID,
		SiteID: cmd.SiteID, Spec: spec, Start: start.UTC(), End: cmd.End.UTC(), Charges: charges,
		Conditions: []core.Condition{}, Version: 1}
	event := core.EventReservationBooked
	if where == nil {
		r.State, r.Conditions, event = core.ReservationPending, unschedulable(reasons), core.EventReservationPending
	} else {
		r.NodeID, r.DeviceIDs = where.nodeID, where.deviceIDs
	}
	if err := core.CheckTransition(core.ReservationStateTable(), core.StateNone, r.State); err != nil {
		return ReservationResult{}, err
	}
	if _, err := q.ReservationCreate(ctx, db.ReservationCreateParams{ID: id, TenantID: actor.Tenant,
		CreatedBy: actor.Identity, State: string(r.State), PoolID: optional(cmd.PoolID), SiteID: optional(cmd.SiteID),
		Spec: mustJSON(spec), StartTs: start, EndTs: cmd.End, Charges: mustJSON(charges), Conditions: mustJSON(r.Conditions),
	}); err != nil {
		return ReservationResult{}, pg.Translate(err, "reservation")
	}
	allocationID := ""
	if where != nil {
		allocationID = where.allocationID
	}
	pos, err := emit(ctx, q, event, r.Tenant, core.ReservationSubject(id), reservationEvent(r, allocationID))
	if err != nil {
		return ReservationResult{}, err
	}
	if where == nil {
		err = workqueue.Enqueue(ctx, q, KindReservationPlace, id, h.pendingRetry())
		if err == nil {
			err = workqueue.Enqueue(ctx, q, KindReservationExpire, id, cmd.End.Sub(now))
		}
	} else if err = scheduleBooked(ctx, q, id, now, start, cmd.End); err == nil {
		// Booked: the allocation goes to the node's daemon now (see
		// assignments.go for why at booking and not at the start).
		_, err = enqueueAssign(ctx, q, actor.Identity, where.allocationID, fixedKey(assignKeyPrefix+where.allocationID))
	}
	return ReservationResult{Reservation: r, Position: pos}, err
}

// quotaCharges is what a request charges before placement: gpu (atoms of
// any kind), vcpu, memory and disk when asked for. The per-model quota,
// gpu:<model>, is charged by placement for the model of the atoms it books,
// whatever the request named (tryNode).
func quotaCharges(spec core.ReservationSpec) map[string]int64 {
	charges := map[string]int64{}
	add := func(res string, n int64) {
		if n > 0 {
			charges[res] = n
		}
	}
	add(core.ResourceGPU, int64(spec.GPU.Count))
	add(core.ResourceVCPU, spec.VCPU)
	add(core.ResourceMemory, spec.MemoryMB)
	add(core.ResourceDisk, spec.DiskGB)
	return charges
}

// lockQuota locks, FOR UPDATE in resource order and before any pool, node
// or device (quota_usage is first in the lock order), the tenant's rows for
// charges and, when the spec asks for GPUs, every gpu:<model> row: the model
// is known only once placement picks a node, so all the candidate models'
// rows are taken up front. It returns the models that have a quota.
func lockQuota(ctx context.Context, q *db.Queries, tenant string, charges map[string]int64, spec core.ReservationSpec) (map[string]bool, error) {
	rows, err := q.QuotaUsageLockForCharge(ctx, db.QuotaUsageLockForChargeParams{TenantID: tenant,
		Resources: slices.Collect(maps.Keys(charges)), WithModels: spec.GPU.Count > 0})
	if err != nil {
		return nil, pg.Translate(err, "quota")
	}
	models := map[string]bool{}
	for _, res := range rows {
		if m, ok := strings.CutPrefix(res, core.GPUModelQuota("")); ok {
			models[m] = true
		}
	}
	return models, nil
}
