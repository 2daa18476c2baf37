package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// defaultInstanceCommand is the fake workload: something that really runs
// until it is stopped.
const defaultInstanceCommand = "sleep 86400"

// CreateInstance starts a workload on an active reservation's devices.
type CreateInstance struct {
	ReservationID  string
	Spec           core.InstanceSpec
	IdempotencyKey string `json:"-"`
}

// validate refuses a request that could start nothing, before its key is
// claimed.
func (c CreateInstance) validate() error {
	if c.ReservationID == "" {
		return core.Errorf(core.CodeInvalidArgument, "reservationId is required")
	}
	return c.Spec.Validate()
}

// InstanceResult is an instance as written and the position of the last
// event the command wrote (zero when it wrote none).
type InstanceResult struct {
	Instance core.Instance   `json:"instance"`
	Position outbox.Position `json:"position"`
}

// instancePayload is what the daemon gets in an instance-start or
// instance-stop command.
type instancePayload struct {
	InstanceID string `json:"instanceId"`
	Script     string `json:"script,omitempty"`
	Image      string `json:"image,omitempty"`
}

// MaxUnfinishedInstances bounds a reservation's instances that have not
// finished. Each keeps a process of its own on the node's daemon (its
// runc exec, about 10 MiB outside the allocation's memory limit), so an
// unbounded number would let one tenant spend the node's memory; node
// jobs have the same kind of bound (64 open per tenant and node).
const MaxUnfinishedInstances = 64

// CreateInstance runs instances.create: the instance is requested and an
// instance-start command is queued for the reservation's node. The start
// is not retry-safe: a daemon that lost its journal cannot tell whether it
// started the workload, so the instance fails instead of running twice.
// Another tenant's reservation is NOT_FOUND; one that is not active now
// (booked for a window that has not begun, or ended) is CONFLICT: the
// database decides, under a lock on the reservation, and the insert itself
// is guarded by the same condition.
func (h *Handlers) CreateInstance(ctx context.Context, actor core.Actor, cmd CreateInstance) (InstanceResult, error) {
	if !actor.CanWrite() {
		return InstanceResult{}, core.Errorf(core.CodePermissionDenied, "instances.create needs the member or operator role")
	}
	if err := cmd.validate(); err != nil {
		return InstanceResult{}, keyReusedFirst(ctx, h, actor, cmd.IdempotencyKey, "instances.create", cmd, err)
	}
	if cmd.Spec.Command == "" {
		cmd.Spec.Command = defaultInstanceCommand
	}
	res, err := idempotent(ctx, h, actor, cmd.IdempotencyKey, "instances.create", cmd,
		func(ctx context.Context, tx pgx.Tx) (InstanceResult, error) {
			return createInstance(ctx, db.New(tx), actor, cmd)
		})
	if err != nil {
		return InstanceResult{}, fmt.Errorf("create instance on reservation %s: %w", cmd.ReservationID, err)
	}
	return res, nil
}

func createInstance(ctx context.Context, q *db.Queries, actor core.Actor, cmd CreateInstance) (InstanceResult, error) {
	// The reservation is locked FOR SHARE until the instance is written:
	// it cannot end or be released in between.
	r, err := q.InstanceReservationLock(ctx, cmd.ReservationID)
	if err != nil {
		return InstanceResult{}, pg.Translate(err, "reservation "+cmd.ReservationID)
	}
	if !actor.Sees(r.TenantID) {
		return InstanceResult{}, core.Errorf(core.CodeNotFound, "reservation %s not found", cmd.ReservationID)
	}
	if !r.Runnable {
		return InstanceResult{}, notRunnable(r.ID, core.State(r.State), r.StartTs, "instances run")
	}
	allocs, err := q.AllocationListLive(ctx, r.ID)
	if err != nil || len(allocs) == 0 {
		return InstanceResult{}, core.Errorf(core.CodeConflict, "reservation %s holds no devices", r.ID)
	}
	a := allocs[0]
	unfinished, err := q.InstanceCountUnfinished(ctx, a.ID)
	if err != nil {
		return InstanceResult{}, pg.Translate(err, "instances")
	}
	if unfinished >= MaxUnfinishedInstances {
		return InstanceResult{}, core.Errorf(core.CodeConflict,
			"reservation %s has %d instances not finished, the most allowed: stop some before starting more", r.ID, unfinished)
	}
	if err := core.CheckTransition(core.ProvisionStateTable(), core.StateNone, core.ProvisionRequested); err != nil {
		return InstanceResult{}, err
	}
	spec, err := json.Marshal(cmd.Spec)
	if err != nil {
		return InstanceResult{}, fmt.Errorf("encode spec: %w", err)
	}
	i, err := q.InstanceInsert(ctx, db.InstanceInsertParams{ID: "ins_" + core.NewID().String(), TenantID: r.TenantID,
		ReservationID: r.ID, AllocationID: a.ID, NodeID: a.NodeID, Spec: spec})
	if errors.Is(err, pgx.ErrNoRows) { // the guard: not active now
		return InstanceResult{}, notRunnable(r.ID, core.State(r.State), r.StartTs, "instances run")
	}
	if err != nil {
		return InstanceResult{}, pg.Translate(err, "instance")
	}
	if _, err := appendInstanceEvent(ctx, q, i); err != nil {
		return InstanceResult{}, err
	}
	pos, err := queueInstanceCommand(ctx, q, actor, i, core.NodeCommandInstanceStart,
		instancePayload{InstanceID: i.ID, Script: cmd.Spec.Command, Image: cmd.Spec.Image})
	if err != nil {
		return InstanceResult{}, err
	}
	view, err := instanceView(i)
	return InstanceResult{Instance: view, Position: pos}, err
}

// notRunnable is the CONFLICT of a workload (an instance, a node job) asked
// for on a reservation that is not active now: a booked one says when it
// starts, since until then another tenant may hold its devices, and to try
// again once it is active: a start that has just passed leaves it booked
// until the activation runs, seconds later, which "starting at" a moment
// already gone does not explain. An active one is not runnable only once
// its end has passed, before its expiry has run: it says the window ended,
// not that it is active.
func notRunnable(reservationID string, state core.State, start time.Time, what string) error {
	switch state {
	case core.ReservationBooked:
		return core.Errorf(core.CodeConflict, "reservation %s is booked, starting at %s; %s only while it is active: "+
			"try again once it is (within seconds of its start)", reservationID, start.UTC().Format(time.RFC3339), what)
	case core.ReservationActive:
		return core.Errorf(core.CodeConflict, "reservation %s has reached its end and is expiring; %s only inside its window",
			reservationID, what)
	}
	return core.Errorf(core.CodeConflict, "reservation %s is %s; %s only while it is active", reservationID, state, what)
}

// queueInstanceCommand queues the node command that carries out one step
// of an instance, keyed inst:<id>:<kind> so that each step exists once.
func queueInstanceCommand(ctx context.Context, q *db.Queries, actor core.Actor, i db.Instance, kind string, p instancePayload) (outbox.Position, error) {
	payload, err := json.Marshal(p)
	if err != nil {
		return outbox.Position{}, fmt.Errorf("encode payload: %w", err)
	}
	res, err := queueNodeCommand(ctx, q, db.NodeCommandInsertParams{ID: "cmd_" + core.NewID().String(), TenantID: i.TenantID,
		Identity: actor.Identity, NodeID: i.NodeID, AllocationID: &i.AllocationID,
		IdempotencyKey: "inst:" + i.ID + ":" + kind, Kind: kind, Payload: payload, InstanceID: &i.ID})
	if err != nil {
		return outbox.Position{}, pg.Translate(err, "instance command")
	}
	return res.Position, nil
}

// DeleteInstance runs instances.delete: the instance is stopping and an
// instance-stop command is queued. Deleting an instance that is already
// stopping or ended (stopped, failed, succeeded) changes nothing and returns it as it is, so
// a retried DELETE is safe.
func (h *Handlers) DeleteInstance(ctx context.Context, actor core.Actor, id string) (InstanceResult, error) {
	if !actor.CanWrite() {
		return InstanceResult{}, core.Errorf(core.CodePermissionDenied, "instances.delete needs the member or operator role")
	}
	var out InstanceResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		i, err := q.InstanceGetForUpdate(ctx, id)
		if err != nil {
			return pg.Translate(err, "instance "+id)
		}
		if !actor.Sees(i.TenantID) {
			return core.Errorf(core.CodeNotFound, "instance %s not found", id)
		}
		out = InstanceResult{}
		switch core.State(i.State) {
		case core.ProvisionStopping, core.ProvisionStopped, core.ProvisionFailed, core.ProvisionSucceeded:
			out.Instance, err = instanceView(i)
			return err
		}
		if i, _, err = moveInstance(ctx, q, i, core.ProvisionStopping, ""); err != nil {
			return err
		}
		if out.Position, err = queueInstanceCommand(ctx, q, actor, i, core.NodeCommandInstanceStop,
			instancePayload{InstanceID: i.ID}); err != nil {
			return err
		}
		out.Instance, err = instanceView(i)
		return err
	})
	if err != nil {
		return InstanceResult{}, fmt.Errorf("delete instance %s: %w", id, err)
	}
	return out, nil
}

// GetInstance reads one instance. Another tenant's instance is NOT_FOUND.
func (h *Handlers) GetInstance(ctx context.Context, actor core.Actor, id string) (core.Instance, error) {
	i, err := db.New(h.Pool).InstanceGet(ctx, id)
	if err != nil {
		return core.Instance{}, pg.Translate(err, "instance "+id)
	}
	if !actor.Sees(i.TenantID) {
		return core.Instance{}, core.Errorf(core.CodeNotFound, "instance %s not found", id)
	}
	return instanceView(i)
}
