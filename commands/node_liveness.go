package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
)

// Node liveness: credentials issued at join, sessions opened through
// gateways, liveness flushed as ages, and the liveness reconciler that
// applies "disconnected is not dead". The gateway (package gateway) holds
// the daemons' connections and calls these commands; it writes nothing
// itself.
//
// PostgreSQL is the truth. node_sessions holds the session epoch that
// fences every routing and liveness write (AND session_epoch = $epoch), so
// a gateway that lost a session to a newer one changes nothing. Gateways
// report ages ("last seen 3.2 s ago") and the database turns them into
// compute_now() - age, so a gateway's clock never decides whether a node is
// alive.
//
// Liveness changes a node's condition, never what it owns: no liveness
// transition releases a booking, an allocation or quota. An operator
// decides when a machine is really gone (DrainNode, ReleaseNode,
// RetireNode).

// Timings from the specification ("Disconnected is not dead").
const (
	// NoSessionAfter is how long a node may be without a session before it
	// becomes unreachable, grace excluded.
	NoSessionAfter = 40 * time.Second
	// GatewayLostGrace is added after the node's gateway lost its lease: the
	// daemon needs time to find another gateway.
	GatewayLostGrace = 120 * time.Second
	// OutageGrace is added after a database or controller outage: no daemon
	// could reconnect while the control plane itself was down.
	OutageGrace = 5 * time.Minute
	// OutageThreshold is the controller heartbeat gap that counts as an
	// outage. Sweeps run every LivenessSweepEvery; a gap six times longer
	// means no controller ran or the database was unreachable.
	OutageThreshold = 30 * time.Second
	// LivenessSweepEvery is how often the liveness sweep runs.
	LivenessSweepEvery = 5 * time.Second
)

// Work-queue kinds of node liveness. KindNodeLiveness is keyed by node id
// and runs at the node's next threshold; KindNodeLivenessSweep has the
// single key LivenessSweepKey and re-enqueues itself every
// LivenessSweepEvery.
const (
	KindNodeLiveness      = "node.liveness"
	KindNodeLivenessSweep = "node.liveness-sweep"
	LivenessSweepKey      = "fleet"
)

// NodeCondition is a condition raised on a node, with when it was raised;
// node events carry them, so the type lives in core.
type NodeCondition = core.NodeCondition

// livenessChange is one liveness transition of a locked node row.
type livenessChange struct {
	to         core.State
	event      string
	addReason  string // added to no_schedule_reasons, if not there
	dropReason string // removed from no_schedule_reasons
	raise      *NodeCondition
	clear      string // condition type removed
	// data is the event's data: the node after the transition, as
	// applyLiveness passes it, and what this event adds (a
	// core.Node*EventData that embeds it).
	data func(node core.NodeLivenessEventData) any
}

// applyLiveness checks the transition against the node liveness table,
// writes the node row with a version guard (the row the placer locks FOR
// SHARE, so placement and liveness linearize), and appends exactly one
// event carrying the node's new version.
func applyLiveness(ctx context.Context, q *db.Queries, n db.NodeLivenessLockRow, c livenessChange) (outbox.Position, error) {
	from := core.State(n.State)
	if err := core.CheckTransition(core.NodeLivenessTable(), from, c.to); err != nil {
		return outbox.Position{}, err
	}
	reasons := slices.Clone(n.NoScheduleReasons)
	if c.dropReason != "" {
		reasons = slices.DeleteFunc(reasons, func(r string) bool { return r == c.dropReason })
	}
	if c.addReason != "" && !slices.Contains(reasons, c.addReason) {
		reasons = append(reasons, c.addReason)
	}
	if reasons == nil {
		reasons = []string{}
	}
	var conds []NodeCondition
	if len(n.Conditions) > 0 {
		if err := json.Unmarshal(n.Conditions, &conds); err != nil {
			return outbox.Position{}, fmt.Errorf("decode conditions of node %s: %w", n.ID, err)
		}
	}
	if c.clear != "" {
		conds = slices.DeleteFunc(conds, func(x NodeCondition) bool { return x.Type == c.clear })
	}
	if c.raise != nil {
		conds = slices.DeleteFunc(conds, func(x NodeCondition) bool { return x.Type == c.raise.Type })
		conds = append(conds, *c.raise)
	}
	if conds == nil {
		conds = []NodeCondition{}
	}
	condJSON, err := json.Marshal(conds)
	if err != nil {
		return outbox.Position{}, fmt.Errorf("encode conditions: %w", err)
	}
	rows, err := q.NodeLivenessUpdate(ctx, db.NodeLivenessUpdateParams{ID: n.ID, Version: n.Version,
		State: string(c.to), NoScheduleReasons: reasons, Conditions: condJSON})
	if err != nil {
		return outbox.Position{}, pg.Translate(err, "node "+n.ID)
	}
	if rows == 0 {
		return outbox.Position{}, core.Errorf(core.CodeConflict, "node %s was changed concurrently", n.ID)
	}
	pos, err := emit(ctx, q, c.event, "", core.NodeSubject(n.ID), c.data(core.NodeLivenessEventData{
		ID: n.ID, PoolID: n.PoolID, State: c.to, PreviousState: from, NoScheduleReasons: reasons,
		Conditions: conds, Version: n.Version + 1}))
	if err != nil {
		return outbox.Position{}, fmt.Errorf("append %s event: %w", c.event, err)
	}
	return pos, nil
}

// disconnect moves a connected node to disconnected and wakes the liveness
// reconciler when its unreachable threshold can first be due.
func disconnect(ctx context.Context, q *db.Queries, n db.NodeLivenessLockRow, reason string, epoch int64, wait time.Duration) error {
	if core.State(n.State) != core.NodeConnected {
		return nil // e.g. retired meanwhile: the session row alone changes
	}
	if _, err := applyLiveness(ctx, q, n, livenessChange{to: core.NodeDisconnected, event: core.EventNodeDisconnected,
		data: func(node core.NodeLivenessEventData) any {
			return core.NodeDisconnectedEventData{NodeLivenessEventData: node, Reason: reason, SessionEpoch: epoch}
		}}); err != nil {
		return err
	}
	return workqueue.Enqueue(ctx, q, KindNodeLiveness, n.ID, wait)
}
