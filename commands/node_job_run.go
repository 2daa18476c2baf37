package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
)

// MaxCommandTimeout bounds how long the daemon lets an exec run.
const MaxCommandTimeout = 3600

// RunNodeCommand asks a node's daemon to run something. IdempotencyKey is
// required: it is both the API's idempotency key (scoped to tenant,
// identity and key) and the command's UNIQUE (node_id, tenant_id,
// idempotency_key),
// so a workflow step (wf:<workflowId>:<stepId>) that is retried under
// another identity still creates one command.
type RunNodeCommand struct {
	NodeID       string
	AllocationID string // optional: the tenant's allocation the command is for
	// IdempotencyKey is required.
	IdempotencyKey string
	Kind           string
	// RetrySafe says the command may be sent again to a daemon that lost its
	// journal. Only exec may be retry-safe: a wipe or deploy is never
	// replayed into a daemon that forgot whether it ran it.
	RetrySafe     bool
	Payload       core.NodeCommandPayload
	MinGeneration int64
}

// NodeCommandResult is a command as written and the position of its event
// (zero when a repeated key returned the existing command).
type NodeCommandResult struct {
	Command  core.NodeCommand `json:"command"`
	Position outbox.Position  `json:"position"`
}

func (cmd RunNodeCommand) validate(actor core.Actor) error {
	switch {
	case !actor.CanWrite():
		return core.Errorf(core.CodePermissionDenied, "commands.run needs the member or operator role")
	case cmd.NodeID == "":
		return core.Errorf(core.CodeInvalidArgument, "nodeId is required")
	case cmd.IdempotencyKey == "":
		return core.Errorf(core.CodeInvalidArgument, "an Idempotency-Key is required to run a node command")
	case cmd.MinGeneration < 0:
		return core.Errorf(core.CodeInvalidArgument, "minGeneration must not be negative")
	case cmd.Payload.TimeoutSeconds < 0 || cmd.Payload.TimeoutSeconds > MaxCommandTimeout:
		return core.Errorf(core.CodeInvalidArgument, "timeoutSeconds must be 0 (the default) to %d", MaxCommandTimeout)
	}
	switch cmd.Kind {
	case core.NodeCommandExec:
		if cmd.Payload.Script == "" {
			return core.Errorf(core.CodeInvalidArgument, "an exec command needs payload.script")
		}
		if err := core.ValidateScript("payload.script", cmd.Payload.Script); err != nil {
			return err
		}
	case core.NodeCommandWipe, core.NodeCommandDeploy:
		// Fleet operations: they change the machine under every tenant.
		if !actor.IsOperator() {
			return core.Errorf(core.CodePermissionDenied, "a %s command requires the operator role", cmd.Kind)
		}
		if cmd.RetrySafe {
			return core.Errorf(core.CodeInvalidArgument, "a %s command is never retry-safe", cmd.Kind)
		}
	default:
		return core.Errorf(core.CodeInvalidArgument, "kind must be exec, wipe or deploy, not %q", cmd.Kind)
	}
	return nil
}

// RunNodeCommand runs commands.run. An operator may command any node; a
// tenant only inside its own allocation on the node while that allocation's
// reservation is active (see tenantAllocation). The command is queued and
// node.command.dispatch is woken for the node.
func (h *Handlers) RunNodeCommand(ctx context.Context, actor core.Actor, cmd RunNodeCommand) (NodeCommandResult, error) {
	if err := cmd.validate(actor); err != nil {
		return NodeCommandResult{}, keyReusedFirst(ctx, h, actor, cmd.IdempotencyKey, "commands.run", cmd, err)
	}
	payload, err := json.Marshal(cmd.Payload)
	if err != nil {
		return NodeCommandResult{}, fmt.Errorf("encode payload: %w", err)
	}
	res, err := idempotent(ctx, h, actor, cmd.IdempotencyKey, "commands.run", cmd,
		func(ctx context.Context, tx pgx.Tx) (NodeCommandResult, error) {
			return h.runNodeCommand(ctx, db.New(tx), actor, cmd, payload)
		})
	if err != nil {
		return NodeCommandResult{}, fmt.Errorf("run command on node %s: %w", cmd.NodeID, err)
	}
	return res, nil
}

func (h *Handlers) runNodeCommand(ctx context.Context, q *db.Queries, actor core.Actor, cmd RunNodeCommand, payload []byte) (NodeCommandResult, error) {
	if actor.IsOperator() {
		if _, err := q.NodeGet(ctx, cmd.NodeID); err != nil {
			return NodeCommandResult{}, pg.Translate(err, "node "+cmd.NodeID)
		}
	} else {
		alloc, err := tenantAllocation(ctx, q, actor, cmd)
		if err != nil {
			return NodeCommandResult{}, err
		}
		cmd.AllocationID = alloc
	}
	if err := h.checkNodeJobLimits(ctx, q, actor, cmd); err != nil {
		if errors.Is(err, errNodeJobKeyTaken) {
			return existingNodeCommand(ctx, q, actor, cmd, payload)
		}
		return NodeCommandResult{}, err
	}
	var alloc *string
	if cmd.AllocationID != "" {
		alloc = &cmd.AllocationID
	}
	res, err := queueNodeCommand(ctx, q, db.NodeCommandInsertParams{ID: "cmd_" + core.NewID().String(),
		TenantID: actor.Tenant, Identity: actor.Identity, NodeID: cmd.NodeID, AllocationID: alloc,
		IdempotencyKey: cmd.IdempotencyKey, Kind: cmd.Kind, RetrySafe: cmd.RetrySafe, Payload: payload,
		MinGeneration: cmd.MinGeneration})
	if errors.Is(err, pgx.ErrNoRows) {
		return existingNodeCommand(ctx, q, actor, cmd, payload)
	}
	return res, err
}

// errNodeJobKeyTaken: the node already has a job of the tenant's under the key,
// so nothing new would be queued (the existing job is returned).
var errNodeJobKeyTaken = errors.New("idempotency key taken")

// checkNodeJobLimits refuses a job that could never run or that would
// queue more than the tenant may have open on the node, before anything is
// written:
//
//   - minGeneration above the node's desired generation now is
//     INVALID_ARGUMENT: generations grow only with the control plane's own
//     changes, so the job could wait for one that never comes;
//   - a tenant with MaxOpenNodeJobs jobs queued, sent or running on the
//     node is CONFLICT, unless the key names one it already has
//     (errNodeJobKeyTaken: the caller returns it). The count is taken under a lock
//     on (tenant, node), held to commit, so concurrent requests cannot pass
//     the cap together.
func (h *Handlers) checkNodeJobLimits(ctx context.Context, q *db.Queries, actor core.Actor, cmd RunNodeCommand) error {
	if cmd.MinGeneration > 0 {
		g, err := q.NodeDesiredGeneration(ctx, cmd.NodeID)
		if err != nil {
			return pg.Translate(err, "node "+cmd.NodeID)
		}
		if cmd.MinGeneration > g {
			return core.Errorf(core.CodeInvalidArgument,
				"minGeneration %d is above node %s's generation %d: the job would wait for a change that may never come",
				cmd.MinGeneration, cmd.NodeID, g)
		}
	}
	err := q.NodeCommandLockTenantNode(ctx, db.NodeCommandLockTenantNodeParams{TenantID: actor.Tenant, NodeID: cmd.NodeID})
	if err != nil {
		return pg.Translate(err, "node jobs")
	}
	open, err := q.NodeCommandCountOpen(ctx, db.NodeCommandCountOpenParams{NodeID: cmd.NodeID, TenantID: actor.Tenant})
	if err != nil {
		return pg.Translate(err, "node jobs")
	}
	limit := h.maxOpenNodeJobs()
	if open < int64(limit) {
		return nil
	}
	if taken, err := keyTaken(ctx, q, cmd.NodeID, actor.Tenant, cmd.IdempotencyKey); err != nil || taken {
		if err != nil {
			return err
		}
		return errNodeJobKeyTaken
	}
	return core.Errorf(core.CodeConflict,
		"you have %d node jobs open on node %s, the most allowed: wait for some to finish before queuing more", open, cmd.NodeID)
}

// tenantAllocation is the allocation a tenant's node job runs in. A tenant
// never runs anything on a node as such: the daemon runs the job under the
// allocation's own unprivileged user, so the job must belong to a live
// allocation of the tenant's on that node (the named one, or when none is
// named the only one active now) whose reservation is active now, as the
// database says under a FOR SHARE lock on the reservation held until the
// job is written. A node where the tenant holds nothing is NOT_FOUND, so
// that it learns nothing about nodes it does not use; a booking whose
// window has not begun is CONFLICT.
func tenantAllocation(ctx context.Context, q *db.Queries, actor core.Actor, cmd RunNodeCommand) (string, error) {
	rows, err := q.NodeCommandTenantAllocations(ctx, db.NodeCommandTenantAllocationsParams{NodeID: cmd.NodeID,
		TenantID: actor.Tenant})
	if err != nil {
		return "", pg.Translate(err, "allocations")
	}
	if cmd.AllocationID != "" {
		rows = slices.DeleteFunc(rows, func(r db.NodeCommandTenantAllocationsRow) bool {
			return r.AllocationID != cmd.AllocationID
		})
	} else if usable := slices.DeleteFunc(slices.Clone(rows), func(r db.NodeCommandTenantAllocationsRow) bool {
		return !r.Usable
	}); len(usable) > 0 {
		rows = usable // unnamed: the tenant means an allocation it can use now
	}
	switch {
	case len(rows) == 0:
		return "", core.Errorf(core.CodeNotFound, "node %s not found", cmd.NodeID)
	case len(rows) > 1:
		return "", core.Errorf(core.CodeInvalidArgument,
			"you hold %d allocations on node %s: name the one to run in with allocationId", len(rows), cmd.NodeID)
	case !rows[0].Usable:
		return "", notRunnable(rows[0].ReservationID, core.State(rows[0].State), rows[0].StartTs,
			"node jobs in allocation "+rows[0].AllocationID+" run")
	}
	return rows[0].AllocationID, nil
}

// queueNodeCommand inserts a queued command, appends node_command.queued
// (node_assignment.queued for an assign or unassign) and wakes the node's
// dispatch. pgx.ErrNoRows means the node already has a
// command under the key.
func queueNodeCommand(ctx context.Context, q *db.Queries, p db.NodeCommandInsertParams) (NodeCommandResult, error) {
	if err := core.CheckTransition(core.CommandStateTable(), core.StateNone, core.CommandQueued); err != nil {
		return NodeCommandResult{}, err
	}
	row, err := q.NodeCommandInsert(ctx, p)
	if errors.Is(err, pgx.ErrNoRows) {
		return NodeCommandResult{}, err
	}
	if err != nil {
		return NodeCommandResult{}, pg.Translate(err, "node command")
	}
	c, err := nodeCommandView(row)
	if err != nil {
		return NodeCommandResult{}, err
	}
	typ, tenant := core.NodeJobEvent(c.Kind, core.CommandQueued, c.Tenant)
	pos, err := emit(ctx, q, typ, tenant, core.NodeCommandSubject(c.ID), c)
	if err != nil {
		return NodeCommandResult{}, err
	}
	if err := workqueue.Enqueue(ctx, q, KindNodeJobDispatch, p.NodeID, 0); err != nil {
		return NodeCommandResult{}, err
	}
	return NodeCommandResult{Command: c, Position: pos}, nil
}

// existingNodeCommand answers a key the node has already seen (from another
// identity, or after the API's own idempotency record expired): the same
// command of the same tenant is returned as it is now; anything else is a
// reused key.
func existingNodeCommand(ctx context.Context, q *db.Queries, actor core.Actor, cmd RunNodeCommand, payload []byte) (NodeCommandResult, error) {
	row, err := q.NodeCommandGetByKey(ctx, db.NodeCommandGetByKeyParams{NodeID: cmd.NodeID, TenantID: actor.Tenant,
		IdempotencyKey: cmd.IdempotencyKey})
	if err != nil {
		return NodeCommandResult{}, pg.Translate(err, "node command")
	}
	if row.TenantID != actor.Tenant || row.Kind != cmd.Kind || row.RetrySafe != cmd.RetrySafe ||
		row.MinGeneration != cmd.MinGeneration || !sameJSON(row.Payload, payload) {
		return NodeCommandResult{}, core.Errorf(core.CodeIdempotencyKeyReused,
			"node %s already has a different command under idempotency key %q", cmd.NodeID, cmd.IdempotencyKey)
	}
	c, err := nodeCommandView(row)
	return NodeCommandResult{Command: c}, err
}

// sameJSON compares two JSON documents by value (jsonb normalises spacing
// and key order).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// GetNodeCommand reads one command. Another tenant's command is NOT_FOUND.
func (h *Handlers) GetNodeCommand(ctx context.Context, actor core.Actor, id string) (core.NodeCommand, error) {
	row, err := db.New(h.Pool).NodeCommandGet(ctx, id)
	if err != nil {
		return core.NodeCommand{}, pg.Translate(err, "command "+id)
	}
	if !actor.Sees(row.TenantID) {
		return core.NodeCommand{}, core.Errorf(core.CodeNotFound, "command %s not found", id)
	}
	return nodeCommandView(row)
}
