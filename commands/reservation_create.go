package commands

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
)

// CreateReservation runs reservations.create for the actor's tenant. It
// charges quota first (final on failure), then places under savepoints;
// when no node fits after the attempts, the reservation is pending with an
// Unschedulable condition, keeps its charge and is retried every 30 s.
func (h *Handlers) CreateReservation(ctx context.Context, actor core.Actor, cmd CreateReservation) (ReservationResult, error) {
	if !actor.CanWrite() {
		return ReservationResult{}, core.Errorf(core.CodePermissionDenied, "reservations.create requires a member or operator role")
	}
	// PostgreSQL keeps microseconds: answer with the window as stored. In
	// UTC, so that a retry under the same Idempotency-Key is the same
	// request whatever offset its times are written with.
	cmd.Start, cmd.End = cmd.Start.Truncate(time.Microsecond).UTC(), cmd.End.Truncate(time.Microsecond).UTC()
	spec, err := cmd.spec()
	if err == nil {
		err = h.checkMinLength(cmd.Start, cmd.End)
	}
	if err != nil {
		return ReservationResult{}, keyReusedFirst(ctx, h, actor, cmd.IdempotencyKey, "reservations.create", cmd, err)
	}
	c := &creation{h: h, actor: actor, cmd: cmd, spec: spec}
	plan := func() (*preemptionPlan, error) {
		return h.planPreemption(ctx, c.reservationToPlace(cmd.Start, nil), c.scope.ClassValue)
	}
	res, err := withPreemption(h, plan, func(plan *preemptionPlan, mayPreempt bool) (ReservationResult, error) {
		c.plan, c.mayPreempt = plan, mayPreempt
		return idempotentWith(ctx, h, actor, cmd.IdempotencyKey, "reservations.create", cmd, c.first, c.run)
	})
	if err != nil {
		return ReservationResult{}, fmt.Errorf("reservations.create: %w", err)
	}
	return res, nil
}

// creation is one reservations.create, in round trips: BEGIN with
// everything that does not depend on a result (the scope and time, the
// quota locked and charged, the candidates of the sample with their free
// atoms); one for the first placement attempt, two for each later one
// (tryNode); the reservation, its events and work, and the COMMIT, in one
// more. Every rule is checked as before, on the results, and
// a check that fails rolls back what the statements after it did: the
// transaction for the scope and quota, the savepoint for an attempt.
type creation struct {
	h      *Handlers
	actor  core.Actor
	cmd    CreateReservation
	spec   core.ReservationSpec
	sample int32

	// Filled by the first round trip.
	id      string
	charges map[string]int64
	scope   db.ReservationPlacementScopeRow
	quota   []db.QuotaUsageLockAndChargeRow // the tenant's rows locked, and whether each was charged
	cands   []db.NodePlacementCandidatesRow

	// plan, when set, is the preemption this run carries out (preemption.go);
	// mayPreempt lets a run that finds no node ask for one (errMayPreempt).
	plan       *preemptionPlan
	mayPreempt bool
}

// first queues what goes with BEGIN. It runs again when the transaction is
// retried, so it starts afresh.
func (c *creation) first(ctx context.Context, b *pg.Batch) {
	c.id = "rsv_" + core.NewID().String()
	c.charges = quotaCharges(c.spec)
	c.sample = int32(c.h.placementSample())
	c.scope, c.quota, c.cands = db.ReservationPlacementScopeRow{}, nil, nil
	// The scope, the time and the priority class, read before anything is
	// written; run checks the class before the quota charged below is used
	// (a refusal rolls it back).
	pg.One(ctx, b, (*db.Queries).ReservationPlacementScope, db.ReservationPlacementScopeParams{PoolID: optional(c.cmd.PoolID),
		SiteID: optional(c.cmd.SiteID), TenantID: c.actor.Tenant, ClassName: optional(c.cmd.PriorityClass)}, &c.scope, nil)
	// quota_usage first: lock what this request may charge, including every
	// per-model GPU quota of the tenant, which placement charges for the
	// model it lands on, and charge it, in one guarded statement. A
	// preemption locks its victims' tenants' rows with them, all in
	// (tenant, resource) order, before.
	if c.plan != nil {
		pg.Many(ctx, b, (*db.Queries).QuotaUsageLockTenants, c.plan.tenants, &[]db.QuotaUsageLockTenantsRow{})
	}
	resources, amounts := sortedAmounts(c.charges)
	pg.Many(ctx, b, (*db.Queries).QuotaUsageLockAndCharge, db.QuotaUsageLockAndChargeParams{TenantID: c.actor.Tenant,
		Resources: resources, Amounts: amounts, WithModels: c.spec.GPU.Count > 0}, &c.quota)
	if c.plan == nil { // a preemption places on its plan's node
		planBookingLookups(b)
		pg.Many(ctx, b, (*db.Queries).NodePlacementCandidates, candidatesParams(c.reservationToPlace(c.cmd.Start, nil), &c.sample, true), &c.cands)
	}
}

// placement is the request as the placer sees it.
func (c *creation) reservationToPlace(start time.Time, modelQuotas map[string]bool) reservationToPlace {
	return reservationToPlace{reservationID: c.id, poolID: c.cmd.PoolID, siteID: c.cmd.SiteID, spec: c.spec, start: start, end: c.cmd.End,
		tenant: c.actor.Tenant, modelQuotas: modelQuotas, quotaFinal: true}
}

// run checks the first round trip's results, places, and writes.
func (c *creation) run(ctx context.Context, tx pgx.Tx) (ReservationResult, error) {
	cmd, actor := c.cmd, c.actor
	now := c.scope.Now
	start := cmd.Start
	if start.Before(now) {
		start = now // a window that already began is booked from now
	}
	if !cmd.End.After(start) {
		return ReservationResult{}, core.Errorf(core.CodeInvalidArgument, "the reservation's end %s has passed", storedTime(cmd.End))
	}
	if err := c.h.checkLength(start, cmd.End); err != nil {
		return ReservationResult{}, err
	}
	if err := c.h.checkHorizon(start, now); err != nil {
		return ReservationResult{}, err
	}
	switch {
	case cmd.SiteID != "" && !c.scope.SiteFound:
		return ReservationResult{}, core.Errorf(core.CodeNotFound, "site %s not found", cmd.SiteID)
	case cmd.PoolID != "" && !c.scope.PoolFound:
		return ReservationResult{}, core.Errorf(core.CodeNotFound, "pool %s not found", cmd.PoolID)
	}
	if err := c.checkPriorityClass(); err != nil {
		return ReservationResult{}, err
	}
	var locked, charged []string
	for _, q := range c.quota {
		locked = append(locked, q.Resource)
		if q.Charged {
			charged = append(charged, q.Resource)
		}
	}
	if firstMissing(c.charges, charged) != "" {
		var err error
		if charged, err = chargeAgain(ctx, db.New(tx), actor.Tenant, c.charges, locked, charged); err != nil {
			return ReservationResult{}, err
		}
	}
	if res := firstMissing(c.charges, charged); res != "" {
		return ReservationResult{}, quotaExceeded(ctx, db.New(tx), actor.Tenant, res, c.charges[res])
	}
	modelQuotas := modelQuotasOf(locked)
	charges := maps.Clone(c.charges)
	var tail pg.Batch
	p := c.reservationToPlace(start, modelQuotas)
	p.assign = assignDue(start, now)
	where, reasons, err := c.place(ctx, tx, p, &tail)
	if err != nil {
		return ReservationResult{}, err
	}
	if where != nil {
		maps.Copy(charges, where.modelCharges)
	} else {
		// Pending: within the tenant's cap, and not for a model spelled
		// unlike the fleet's, one more round trip.
		var alike []string
		if c.spec.GPU.Model != "" {
			pg.Many(ctx, &tail, (*db.Queries).DeviceModelsNamedAlike, c.spec.GPU.Model, &alike)
		}
		if err := c.h.checkPendingCap(ctx, tx, &tail, actor.Tenant); err != nil {
			return ReservationResult{}, err
		}
		if misspelledModel(c.spec.GPU.Model, alike) {
			// It would wait, holding its quota, for a model no GPU will
			// ever report: the models are matched exactly.
			return ReservationResult{}, core.Errorf(core.CodeInvalidArgument,
				"no GPU's model is %q, which gpuModel must match exactly, case included: the fleet's is %s",
				c.spec.GPU.Model, strings.Join(alike, " or "))
		}
		tail = pg.Batch{}
	}
	id := c.id
	r := core.Reservation{ID: id, Tenant: actor.Tenant, State: core.ReservationBooked, PoolID: cmd.PoolID,
		SiteID: cmd.SiteID, Spec: c.spec, Start: start.UTC(), End: cmd.End.UTC(), Charges: charges,
		Conditions: []core.Condition{}, Version: 1,
		PriorityClass: c.scope.ClassName, Priority: c.scope.ClassValue, Preemptible: c.scope.ClassPreemptible}
	event := core.EventReservationBooked
	if where == nil {
		r.State, r.Conditions, event = core.ReservationPending, unschedulable(reasons), core.EventReservationPending
	} else {
		r.NodeID, r.DeviceIDs = where.nodeID, where.deviceIDs
	}
	if err := core.CheckTransition(core.ReservationStateTable(), core.StateNone, r.State); err != nil {
		return ReservationResult{}, err
	}
	// One round trip: the savepoint's rollback after a failed last attempt
	// (a successful one's stays open until the COMMIT), the reservation, the
	// node's assign, their events and wake-ups (one statement each), and
	// the COMMIT.
	b := &tail
	pg.ExecRows(ctx, b, (*db.Queries).ReservationCreate, db.ReservationCreateParams{ID: id, TenantID: actor.Tenant,
		CreatedBy: actor.Identity, State: string(r.State), PoolID: optional(cmd.PoolID), SiteID: optional(cmd.SiteID),
		Spec: mustJSON(c.spec), StartTs: start, EndTs: cmd.End, Charges: mustJSON(charges), Conditions: mustJSON(r.Conditions),
		PriorityClass: r.PriorityClass, Priority: r.Priority, Preemptible: r.Preemptible,
	}, nil)
	data := reservationEvent(r, "")
	if where != nil {
		data.AllocationID, data.PlacedPoolID = where.allocationID, where.poolID
	}
	var pos outbox.Position
	var last batchTail
	if err := last.emit(event, r.Tenant, core.ReservationSubject(id), data, &pos); err != nil {
		return ReservationResult{}, err
	}
	if where == nil {
		last.wake(workqueue.Wake{Kind: KindReservationQueue, Key: PendingQueueKey(cmd.PoolID, cmd.SiteID), Delay: c.h.pendingRetry()},
			workqueue.Wake{Kind: KindReservationExpire, Key: id, Delay: cmd.End.Sub(now)})
	} else {
		// One timer: the activation, which queues the expiry (a booking
		// that ends before its start needs none).
		last.wake(workqueue.Wake{Kind: KindReservationActivate, Key: id, Delay: max(start.Sub(now), 0)})
	}
	if where != nil && p.assign {
		// Booked from now: the allocation goes to the node's daemon now.
		// One that starts later goes at its start, with its activation
		// (assignments.go).
		a := db.AllocationAssignmentRow{ID: where.allocationID, ReservationID: id, NodeID: where.nodeID,
			DeviceIds: nonNil(where.deviceIDs), Vcpu: c.spec.VCPU, Memory: c.spec.MemoryMB, Disk: c.spec.DiskGB,
			TenantID: actor.Tenant, State: string(r.State), StartTs: start, EndTs: cmd.End, WorkloadNetwork: where.network}
		if err := queueNewAssign(ctx, b, &last, actor.Identity, a, where, now); err != nil {
			return ReservationResult{}, err
		}
	}
	last.queue(ctx, b)
	if cmd.IdempotencyKey == "" {
		// Nothing is left to check: the commit goes with the writes. (With
		// a key, the stored answer is written after them, in the same
		// transaction.)
		b.Commit()
	}
	if err := b.Send(ctx, tx); err != nil {
		return ReservationResult{}, pg.Translate(err, "reservation")
	}
	return ReservationResult{Reservation: r, Position: pos}, nil
}

// place places the reservation among the candidates of the first round
// trip or, with a plan, on its node once the plan's victims are preempted.
// A reservation that fits nowhere while its class may preempt ends the
// run with errMayPreempt when c.mayPreempt.
func (c *creation) place(ctx context.Context, tx pgx.Tx, p reservationToPlace, tail *pg.Batch) (*placed, []string, error) {
	if c.plan != nil {
		by := preemptor{id: c.id, class: c.scope.ClassName, priority: c.scope.ClassValue}
		if err := c.h.preempt(ctx, tx, c.plan, by); err != nil {
			return nil, nil, err
		}
		where, err := c.h.placeAfterPreemption(ctx, tx, p, c.plan, tail)
		return where, nil, err
	}
	where, reasons, err := c.h.placeWith(ctx, tx, p, placementCandidatesOf(c.cands), listedAtomsOf(c.cands, c.spec.GPU),
		int(c.sample), tail)
	if err == nil && where == nil && c.mayPreempt && c.scope.ClassMayPreempt {
		return nil, nil, errMayPreempt
	}
	return where, reasons, err
}

// checkPriorityClass applies the rules of the class the request names (the
// default one when it names none), read with BEGIN: it exists (else
// INVALID_ARGUMENT), the tenant may use it (else PERMISSION_DENIED) and it
// is preemptible exactly when the request's preemptible, if given, says so
// (else INVALID_ARGUMENT). A refusal rolls back the transaction, the quota
// charged in the same round trip with it: nothing is written.
func (c *creation) checkPriorityClass() error {
	name, want := c.cmd.PriorityClass, c.cmd.Preemptible
	switch {
	case !c.scope.ClassFound && name == "":
		return core.Errorf(core.CodeInvalidArgument, "there is no default priority class: name one in priorityClass")
	case !c.scope.ClassFound:
		return core.Errorf(core.CodeInvalidArgument, "priority class %s does not exist", name)
	case !c.scope.ClassAllowed:
		return core.Errorf(core.CodePermissionDenied, "tenant %s may not use priority class %s", c.actor.Tenant, c.scope.ClassName)
	case want != nil && !*want && c.scope.ClassPreemptible:
		return core.Errorf(core.CodeInvalidArgument,
			"priority class %s is preemptible, and the reservation asks not to be preempted (preemptible: false): "+
				"choose a class that is not preemptible", c.scope.ClassName)
	case want != nil && *want && !c.scope.ClassPreemptible:
		return core.Errorf(core.CodeInvalidArgument,
			"priority class %s is not preemptible, and the reservation asks to be (preemptible: true): "+
				"choose a preemptible class, or leave preemptible out", c.scope.ClassName)
	}
	return nil
}

// chargeAgain charges, in a statement of its own, the resources of charges
// that QuotaUsageLockAndCharge locked but did not charge, and returns
// charged with those it charges now. That statement's guard reads the rows
// as of its snapshot, taken before it waited for their locks, and a row
// that fails the guard there is never re-read: a raise of the max, or a
// refund, that committed while the create waited is missed, and the
// tenant refused with room left ("1 used of 2, this needs 1 more";
// TestQuotaChargeSeesTheLockedRow). The rows are this transaction's now,
// so this statement's snapshot is their last state and its answer final.
// It costs a round trip only on the way to a refusal.
func chargeAgain(ctx context.Context, q *db.Queries, tenant string, charges map[string]int64, locked, charged []string) ([]string, error) {
	var resources []string
	var amounts []int64
	for _, r := range slices.Sorted(maps.Keys(charges)) {
		if slices.Contains(locked, r) && !slices.Contains(charged, r) {
			resources, amounts = append(resources, r), append(amounts, charges[r])
		}
	}
	if len(resources) == 0 {
		return charged, nil
	}
	done, err := q.QuotaUsageChargeMany(ctx, db.QuotaUsageChargeManyParams{TenantID: tenant, Resources: resources, Amounts: amounts})
	if err != nil {
		return nil, pg.Translate(err, "quota")
	}
	return append(slices.Clone(charged), done...), nil
}

// quotaExceeded is rule 5's QUOTA_EXCEEDED for res, with its usage.
func quotaExceeded(ctx context.Context, q *db.Queries, tenant, res string, amount int64) error {
	cur, err := q.QuotaUsageGet(ctx, db.QuotaUsageGetParams{TenantID: tenant, Resource: res})
	if err != nil {
		return core.Errorf(core.CodeQuotaExceeded, "tenant %s has no quota for %s", tenant, res)
	}
	return core.Errorf(core.CodeQuotaExceeded, "quota for %s exceeded: %d used of %d, this needs %d more",
		res, cur.Used, cur.Max, amount)
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
	return modelQuotasOf(rows), nil
}

// modelQuotasOf is the models among locked quota rows (gpu:<model>).
func modelQuotasOf(rows []string) map[string]bool {
	models := map[string]bool{}
	for _, res := range rows {
		if m, ok := strings.CutPrefix(res, core.GPUModelQuota("")); ok {
			models[m] = true
		}
	}
	return models
}
