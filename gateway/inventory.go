package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"golang.org/x/time/rate"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/wire"
)

// A daemon sends its inventory after its hello, then its machine's part
// again when that changes, which it checks once a minute by default. Each
// one is a transaction that may write the node, its devices and events
// (one per GPU that goes missing or comes back), so a node's daemon gets
// inventoryBurst of them, then one every inventoryLimit, across its
// sessions at the gateway (nodeLimits): a daemon that sends more (a bug,
// or a stolen credential), reconnecting or not, cannot make the database
// write as fast as it can send. The ones over the limit are dropped; a
// session whose first report is dropped ends at inventoryDeadline, and the
// daemon's next connect reports again.
const inventoryBurst = 4

var inventoryLimit = rate.Every(10 * time.Second)

// inventoryDeadline is how long after its welcome a daemon has to report
// what it holds. Until that report is reconciled its session is sent no
// assign (commands.ReconcileNodeAssignments), so a daemon that never sends
// it (a bug, an old or foreign client) would hold its node's assigns for
// as long as it keeps the session alive with heartbeats: the gateway ends
// such a session instead, and the daemon's reconnect starts over. The
// agent reports right after its hello; three heartbeats' time is ample.
const inventoryDeadline = 3 * wire.HeartbeatEvery

// inventoryAttempts bounds how often one inventory report is reconciled
// when a concurrent change to the node (a liveness transition, an
// operator's drain) wins the node row's version race.
const inventoryAttempts = 3

// handleInventory takes a daemon's wire.TypeInventory, which it sends after
// every (re)connect: what the machine has and holds, as a wire.NodeState;
// and whenever its machine changes mid-session, with what it holds and
// runs null.
// Each part goes to its command, fenced by the session epoch; a failure is
// logged, not fatal to the session (the daemon reports again at its next
// connect), except that of its assignments: until they are reconciled the
// session is sent no assign (commands.ReconcileNodeAssignments), so
// handleInventory then returns errAssignmentsUnreconciled and the caller
// ends the session, for the daemon to reconnect and report again.
func (g *Gateway) handleInventory(ctx context.Context, s *gatewaySession, m wire.Message) error {
	nodeID, epoch := s.nodeID, s.epoch
	var st wire.NodeState
	if err := json.Unmarshal(m.Payload, &st); err != nil {
		g.logger().Warn("inventory: malformed payload", "gateway", g.ID, "node", nodeID, "epoch", epoch, "err", err)
		return nil
	}
	if st.Assignments != nil {
		// Reported, whether or not the reconciles below succeed: one
		// that fails ends the session itself.
		s.markReported()
	}

	// The machine decides what exists: its GPUs against the node's record,
	// whether it can run tenants' workloads (the WorkloadsRefused
	// condition), and the scalars its operator configured, adopted where
	// the node's bookings fit them (the ScalarsMismatch condition).
	gpus := make([]commands.ReportedGPU, len(st.GPUs))
	for i, x := range st.GPUs {
		gpus[i] = commands.ReportedGPU{UUID: x.UUID, Name: x.Name, Model: x.Model, MemoryMB: x.MemoryMB, MIGEnabled: x.MIGEnabled,
			MIGCapable: x.MIGCapable}
		for _, m := range x.MIG {
			gpus[i].MIG = append(gpus[i].MIG, commands.ReportedMIG{UUID: m.UUID, Profile: m.Profile, Index: m.Index})
		}
	}
	inv := commands.NodeInventory{GPUs: gpus, WorkloadsRefused: st.WorkloadsRefused, DiskLimit: st.DiskLimit}
	if sc := st.Scalars; sc != nil {
		inv.Scalars = &commands.ReportedScalars{VCPU: sc.VCPU, MemoryMB: sc.MemoryMB, DiskGB: sc.DiskGB}
	}
	var res commands.InventoryResult
	var err error
	for range inventoryAttempts {
		res, err = g.Commands.NodeSessions().ReconcileNodeInventory(ctx, nodeID, epoch, inv)
		if err == nil || errors.Is(err, commands.ErrSessionSuperseded) || core.CodeOf(err) != core.CodeConflict {
			break
		}
	}
	switch {
	case errors.Is(err, commands.ErrSessionSuperseded):
		// A newer session reports for itself.
	case err != nil:
		g.logger().Warn("inventory reconcile", "gateway", g.ID, "node", nodeID, "epoch", epoch, "err", err)
	case res.Changed || len(res.Mismatched)+len(res.ScalarsRefused) > 0:
		g.logger().Info("inventory reconciled", "gateway", g.ID, "node", nodeID, "epoch", epoch,
			"missing", res.Missing, "returned", res.Returned, "registered", res.Registered, "mismatched", res.Mismatched,
			"scalarsAdopted", res.ScalarsAdopted, "scalarsRefused", res.ScalarsRefused,
			"workloadsRefused", core.Clip(st.WorkloadsRefused, commands.WorkloadsRefusedMaxBytes))
	}

	// A report of the machine only (the daemon's mid-session report of a
	// changed GPU or sandbox) judges nothing else.
	if st.Assignments == nil {
		return nil
	}
	// The control plane decides who holds it: the daemon's assignments
	// against the node's desired ones, both ways.
	if err := g.reconcileAssignments(ctx, nodeID, epoch, st.Assignments); err != nil {
		return err
	}

	// What runs: an instance the daemon no longer runs ended without a
	// report that arrived. An inventory without the list (null) judges
	// nothing; a daemon that runs none sends an empty one.
	if st.Instances == nil {
		return nil
	}
	running := make([]string, len(st.Instances))
	for i, x := range st.Instances {
		running[i] = x.InstanceID
	}
	lost, err := g.Commands.NodeSessions().ReconcileNodeInstances(ctx, nodeID, epoch, running)
	switch {
	case errors.Is(err, commands.ErrSessionSuperseded):
	case err != nil:
		g.logger().Warn("instance reconcile", "gateway", g.ID, "node", nodeID, "epoch", epoch, "err", err)
	case len(lost) > 0:
		g.logger().Warn("instances the daemon no longer runs ended as lost", "gateway", g.ID, "node", nodeID,
			"epoch", epoch, "instances", lost)
	}
	return nil
}

// errAssignmentsUnreconciled is a daemon's report of its assignments that
// could not be reconciled: its session ends, so that its assigns are not
// held back for the session's life (see handleInventory).
var errAssignmentsUnreconciled = errors.New("the daemon's assignments could not be reconciled")

// reconcileAssignments hands the assignments a daemon reports holding to
// commands.ReconcileNodeAssignments: what the node should hold and does
// not is assigned again, what it holds and should not is unassigned, and
// the session may be sent assigns from then on. A conflict with a
// concurrent change is tried again, as the inventory is; a report that
// still fails is errAssignmentsUnreconciled.
func (g *Gateway) reconcileAssignments(ctx context.Context, nodeID string, epoch int64, held []wire.AssignPayload) error {
	reported := make([]commands.ReportedAssignment, len(held))
	for i, a := range held {
		reported[i] = commands.ReportedAssignment{AllocationID: a.AllocationID, End: a.End}
	}
	var res commands.AssignmentReconcile
	var err error
	for range inventoryAttempts {
		res, err = g.Commands.NodeSessions().ReconcileNodeAssignments(ctx, nodeID, epoch, reported)
		if err == nil || errors.Is(err, commands.ErrSessionSuperseded) || core.CodeOf(err) != core.CodeConflict {
			break
		}
	}
	if len(res.Foreign) > 0 {
		g.logger().Warn("daemon claims allocations assigned to other nodes; told to drop them, nothing else changed",
			"gateway", g.ID, "node", nodeID, "epoch", epoch, "allocations", res.Foreign)
	}
	switch {
	case errors.Is(err, commands.ErrSessionSuperseded):
	case err != nil:
		g.logger().Warn("assignment reconcile failed: ending the session, for the daemon to report again",
			"gateway", g.ID, "node", nodeID, "epoch", epoch, "err", err)
		return errAssignmentsUnreconciled
	case len(res.Repushed)+len(res.Unassigned) > 0:
		g.logger().Info("assignments reconciled", "gateway", g.ID, "node", nodeID, "epoch", epoch,
			"repushed", res.Repushed, "unassigned", res.Unassigned)
	}
	return nil
}
