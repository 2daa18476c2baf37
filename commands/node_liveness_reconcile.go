package commands

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
)

// NodeLiveness is the KindNodeLiveness work-queue handler: it fences
// the shard lease and applies the node's liveness transition if it is due
// (unreachable after NoSessionAfter plus grace, lost after the pool's
// lostAfter), then asks to run again at the node's next threshold.
func (r Reconcilers) NodeLiveness(ctx context.Context, it workqueue.Item) error {
	_, next, err := r.h.reconcileLiveness(ctx, it.Key, func(tx pgx.Tx) error { return it.Lease.Fence(ctx, tx) })
	if err != nil {
		return err
	}
	if next > 0 {
		return workqueue.Again(next)
	}
	return nil
}

// reconcileLiveness is one node's liveness decision in one transaction. It
// refuses to judge while the controller heartbeat is stale: after an
// outage the sweep must first hand out the outage grace, or a node whose
// daemon could not reach a dead control plane would be declared
// unreachable the moment it came back.
func (h *Handlers) reconcileLiveness(ctx context.Context, nodeID string, fence func(pgx.Tx) error) (bool, time.Duration, error) {
	var changed bool
	var next time.Duration
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		changed, next = false, 0
		if fence != nil {
			if err := fence(tx); err != nil {
				return err
			}
		}
		q := db.New(tx)
		age, err := q.NodeLivenessControllerAge(ctx)
		if err != nil {
			return pg.Translate(err, "liveness heartbeat")
		}
		if age < 0 || age > OutageThreshold.Seconds() {
			next = LivenessSweepEvery
			return nil
		}
		n, err := q.NodeLivenessLock(ctx, nodeID)
		if err != nil {
			return pg.Translate(err, "node "+nodeID)
		}
		sess, err := q.NodeSessionGetForUpdate(ctx, nodeID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // registered with NodesWithoutDaemons and never joined: not judged
		}
		if err != nil {
			return pg.Translate(err, "node session")
		}
		now, err := q.NodeLivenessNow(ctx)
		if err != nil {
			return pg.Translate(err, "clock")
		}
		changed, next, err = decideLiveness(ctx, q, n, sess, now)
		return err
	})
	if err != nil {
		return false, 0, fmt.Errorf("liveness of node %s: %w", nodeID, err)
	}
	return changed, next, nil
}

// decideLiveness applies the specification's table to one locked node.
func decideLiveness(ctx context.Context, q *db.Queries, n db.NodeLivenessLockRow, sess db.NodeSession, now time.Time) (bool, time.Duration, error) {
	switch core.State(n.State) {
	case core.NodeRegistered, core.NodeDisconnected:
		if sess.Connected {
			return false, 0, nil
		}
		deadline := sess.DisconnectedSince.Add(NoSessionAfter + livenessGrace(sess.GraceReason))
		if now.Before(deadline) {
			return false, deadline.Sub(now), nil
		}
		reason := unreachableReason(sess)
		message := fmt.Sprintf("no session since %s (%s grace %s)", sess.DisconnectedSince.UTC().Format(time.RFC3339),
			sess.GraceReason, livenessGrace(sess.GraceReason))
		if reason == "NeverConnected" {
			joined, err := q.NodeHasJoined(ctx, n.ID)
			if err != nil {
				return false, 0, pg.Translate(err, "node credentials")
			}
			if !joined {
				reason = "NeverJoined"
				message = fmt.Sprintf("registered and never joined; counted from %s (%s grace %s)",
					sess.DisconnectedSince.UTC().Format(time.RFC3339), sess.GraceReason, livenessGrace(sess.GraceReason))
			}
		}
		_, err := applyLiveness(ctx, q, n, livenessChange{to: core.NodeUnreachable, event: core.EventNodeUnreachable,
			addReason: core.NoScheduleUnreachable,
			raise: &NodeCondition{Condition: core.Condition{Type: core.ConditionNodeUnreachable, Status: true, Reason: reason,
				Message: message}, Since: now},
			data: func(node core.NodeLivenessEventData) any {
				return core.NodeUnreachableEventData{NodeLivenessEventData: node, Reason: reason,
					DisconnectedSince: sess.DisconnectedSince}
			}})
		if err != nil {
			return false, 0, err
		}
		if err := q.NodeSessionMarkUnreachable(ctx, n.ID); err != nil {
			return false, 0, pg.Translate(err, "node session")
		}
		if after, ok := poolLostAfter(n); ok {
			return true, after, nil
		}
		return true, 0, nil
	case core.NodeUnreachable:
		after, ok := poolLostAfter(n)
		if !ok || sess.UnreachableSince == nil {
			return false, 0, nil // bare metal, or no lostAfter: an operator decides
		}
		absence, err := nodeLostDue(ctx, q, n.ID, after)
		if err != nil || !absence.due {
			return false, absence.next, err
		}
		_, err = applyLiveness(ctx, q, n, livenessChange{to: core.NodeLost, event: core.EventNodeLost,
			data: func(node core.NodeLivenessEventData) any {
				return core.NodeLostEventData{NodeLivenessEventData: node, UnreachableSince: absence.unreachableSince,
					LostAfterSeconds: after.Seconds(), CountedFrom: absence.countedFromIfMoved()}
			}})
		return err == nil, 0, err
	}
	return false, 0, nil
}

// nodeAbsence is how long an unreachable node has been away, as the
// database judged it under the node's lock (NodeLivenessLostDue).
type nodeAbsence struct {
	due              bool          // away its pool's lostAfter
	next             time.Duration // when not due: until it will be
	unreachableSince time.Time
	// countedFrom is when the absence started to count: unreachableSince,
	// or the end of a control-plane outage that came later.
	countedFrom time.Time
}

// countedFromIfMoved is countedFrom for node.lost when an outage moved it
// past unreachableSince (so a consumer can tell why the node was lost later
// than unreachableSince + lostAfter), and nil when it did not.
func (a nodeAbsence) countedFromIfMoved() *time.Time {
	if a.countedFrom.Equal(a.unreachableSince) {
		return nil
	}
	return &a.countedFrom
}

// nodeLostDue says whether unreachable node, locked, has been away its
// pool's lostAfter, and otherwise how long until it will have been. The
// database decides, by its clock (NodeLivenessLostDue): the absence counts
// from the later of when the node became unreachable and when the control
// plane last came back from an outage (node_absence_counted_from), because
// a daemon cannot reconnect while the control plane is down, so the outage
// says nothing about the node. This is the rule the node job timeout
// follows (nodeJobTimeoutReason).
func nodeLostDue(ctx context.Context, q *db.Queries, node string, lostAfter time.Duration) (nodeAbsence, error) {
	a, err := q.NodeLivenessLostDue(ctx, db.NodeLivenessLostDueParams{NodeID: node, LostSeconds: lostAfter.Seconds()})
	if errors.Is(err, pgx.ErrNoRows) {
		return nodeAbsence{}, nil // never marked unreachable: nothing to count from
	}
	if err != nil {
		return nodeAbsence{}, pg.Translate(err, "node session of "+node)
	}
	absence := nodeAbsence{due: a.Due, unreachableSince: a.UnreachableSince, countedFrom: a.CountedFrom}
	if !a.Due {
		absence.next = max(time.Duration(a.RemainingSeconds*float64(time.Second)), time.Second)
	}
	return absence, nil
}

// poolLostAfter is the pool's lostAfter for provider and vps-host pools
// that set it. Bare metal is never lost automatically.
func poolLostAfter(n db.NodeLivenessLockRow) (time.Duration, bool) {
	if (n.PoolKind != "provider" && n.PoolKind != "vps-host") || n.LostAfterSeconds == nil {
		return 0, false
	}
	return time.Duration(*n.LostAfterSeconds) * time.Second, true
}

// livenessGrace is the grace a session's grace reason adds to
// NoSessionAfter.
func livenessGrace(reason string) time.Duration {
	switch reason {
	case "gateway-lost":
		return GatewayLostGrace
	case "outage":
		return OutageGrace
	}
	return 0
}

// unreachableReason is the NodeUnreachable condition's reason
// (decideLiveness tells NeverJoined from NeverConnected).
func unreachableReason(sess db.NodeSession) string {
	switch {
	case sess.SessionEpoch == 0:
		return "NeverConnected"
	case sess.GraceReason == "gateway-lost":
		return "GatewayLost"
	case sess.GraceReason == "outage":
		return "Outage"
	}
	return "SessionClosed"
}
