package nodes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/workqueue"
)

// SweepResult says what one liveness sweep did, for logs and tests.
type SweepResult struct {
	// Outage is set when the previous sweep was longer than
	// OutageThreshold ago: the database or every controller was down.
	Outage bool
	// GatewayLost lists nodes whose session ended with its gateway's lease.
	GatewayLost []string
	// Transitioned lists nodes that became unreachable or lost.
	Transitioned []string
}

// Sweep is the liveness controller's periodic pass (work-queue kind
// KindLivenessSweep, every SweepEvery). It
//
//  1. moves the controller heartbeat and detects an outage: a gap above
//     OutageThreshold means nobody could judge liveness meanwhile, so every
//     node without a session restarts its clock now with the 5-minute grace;
//  2. ends the sessions of gateways that lost their lease (disconnected,
//     with the 120 s gateway grace, or the outage grace after an outage);
//  3. applies every unreachable or lost transition that is due.
//
// Per-node KindLiveness items make transitions happen on time between
// sweeps; the sweep is the level-triggered backstop.
func (s *Service) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	err := db.InTx(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		gap, err := q.NodeLivenessHeartbeat(ctx)
		if err != nil {
			return db.Translate(err, "liveness heartbeat")
		}
		res.Outage = gap > OutageThreshold.Seconds()
		if res.Outage {
			_, err = q.NodeSessionOutageGrace(ctx)
			return db.Translate(err, "outage grace")
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("liveness sweep: %w", err)
	}
	if res.Outage {
		s.logger().Warn("liveness: controller or database outage detected; disconnected nodes get the outage grace",
			"grace", OutageGrace.String())
	}
	lost, err := db.New(s.Pool).NodeSessionsOfLostGateways(ctx)
	if err != nil {
		return res, fmt.Errorf("liveness sweep: lost gateways: %w", err)
	}
	for _, l := range lost {
		if err := s.markGatewayLost(ctx, l.NodeID, l.SessionEpoch, l.LostAt, res.Outage); err != nil {
			return res, fmt.Errorf("liveness sweep: %w", err)
		}
		res.GatewayLost = append(res.GatewayLost, l.NodeID)
	}
	due, err := db.New(s.Pool).NodeLivenessDue(ctx, db.NodeLivenessDueParams{
		NoSessionSeconds: NoSessionAfter.Seconds(), GatewayGraceSeconds: GatewayLostGrace.Seconds(),
		OutageGraceSeconds: OutageGrace.Seconds()})
	if err != nil {
		return res, fmt.Errorf("liveness sweep: due nodes: %w", err)
	}
	for _, id := range due {
		changed, _, err := s.reconcile(ctx, id, nil)
		if err != nil {
			return res, fmt.Errorf("liveness sweep: %w", err)
		}
		if changed {
			res.Transitioned = append(res.Transitioned, id)
		}
	}
	return res, nil
}

// ReconcileNode applies the node's liveness transition if it is due and
// returns how long until the next one can be (0: none pending). It is the
// plain method behind KindLiveness, callable from tests in simulated time.
func (s *Service) ReconcileNode(ctx context.Context, nodeID string) (time.Duration, error) {
	_, next, err := s.reconcile(ctx, nodeID, nil)
	return next, err
}

// HandleLiveness is the KindLiveness work-queue handler: it fences the
// shard lease, reconciles the node and asks to run again at the node's
// next threshold.
func (s *Service) HandleLiveness(ctx context.Context, it workqueue.Item) error {
	_, next, err := s.reconcile(ctx, it.Key, func(tx pgx.Tx) error { return it.Lease.Fence(ctx, tx) })
	if err != nil {
		return err
	}
	if next > 0 {
		return workqueue.Again(next)
	}
	return nil
}

// HandleSweep is the KindLivenessSweep work-queue handler.
func (s *Service) HandleSweep(ctx context.Context, _ workqueue.Item) error {
	if _, err := s.Sweep(ctx); err != nil {
		return err
	}
	return workqueue.Again(SweepEvery)
}

// EnsureSweep enqueues the sweep item if it is missing. Workers call it at
// start; enqueueing an existing item keeps its due time.
func (s *Service) EnsureSweep(ctx context.Context) error {
	return workqueue.Enqueue(ctx, db.New(s.Pool), KindLivenessSweep, SweepKey, 0)
}

// reconcile is one node's liveness decision in one transaction. It refuses
// to judge while the controller heartbeat is stale: after an outage the
// sweep must first hand out the outage grace, or a node whose daemon could
// not reach a dead control plane would be declared unreachable the moment
// it came back.
func (s *Service) reconcile(ctx context.Context, nodeID string, fence func(pgx.Tx) error) (bool, time.Duration, error) {
	var changed bool
	var next time.Duration
	err := db.InTx(ctx, s.Pool, func(tx pgx.Tx) error {
		changed, next = false, 0
		if fence != nil {
			if err := fence(tx); err != nil {
				return err
			}
		}
		q := db.New(tx)
		age, err := q.NodeLivenessControllerAge(ctx)
		if err != nil {
			return db.Translate(err, "liveness heartbeat")
		}
		if age < 0 || age > OutageThreshold.Seconds() {
			next = SweepEvery
			return nil
		}
		n, err := q.NodeLivenessLock(ctx, nodeID)
		if err != nil {
			return db.Translate(err, "node "+nodeID)
		}
		sess, err := q.NodeSessionGetForUpdate(ctx, nodeID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // never joined: liveness starts at join
		}
		if err != nil {
			return db.Translate(err, "node session")
		}
		now, err := q.NodeLivenessNow(ctx)
		if err != nil {
			return db.Translate(err, "clock")
		}
		changed, next, err = decide(ctx, q, n, sess, now)
		return err
	})
	if err != nil {
		return false, 0, fmt.Errorf("liveness of node %s: %w", nodeID, err)
	}
	return changed, next, nil
}

// decide applies the specification's table to one locked node.
func decide(ctx context.Context, q *db.Queries, n db.NodeLivenessLockRow, sess db.NodeSession, now time.Time) (bool, time.Duration, error) {
	switch core.State(n.State) {
	case core.NodeRegistered, core.NodeDisconnected:
		if sess.Connected {
			return false, 0, nil
		}
		deadline := sess.DisconnectedSince.Add(NoSessionAfter + graceOf(sess.GraceReason))
		if now.Before(deadline) {
			return false, deadline.Sub(now), nil
		}
		reason := unreachableReason(sess)
		_, err := apply(ctx, q, n, change{to: core.NodeUnreachable, event: core.EventNodeUnreachable,
			addReason: core.NoScheduleUnreachable,
			raise: &Condition{Condition: core.Condition{Type: core.ConditionNodeUnreachable, Status: true, Reason: reason,
				Message: fmt.Sprintf("no session since %s (%s grace %s)", sess.DisconnectedSince.UTC().Format(time.RFC3339),
					sess.GraceReason, graceOf(sess.GraceReason))}, Since: now},
			data: map[string]any{"reason": reason, "disconnectedSince": sess.DisconnectedSince}})
		if err != nil {
			return false, 0, err
		}
		if err := q.NodeSessionMarkUnreachable(ctx, n.ID); err != nil {
			return false, 0, db.Translate(err, "node session")
		}
		if after, ok := lostAfter(n); ok {
			return true, after, nil
		}
		return true, 0, nil
	case core.NodeUnreachable:
		after, ok := lostAfter(n)
		if !ok || sess.UnreachableSince == nil {
			return false, 0, nil // bare metal, or no lostAfter: an operator decides
		}
		deadline := sess.UnreachableSince.Add(after)
		if now.Before(deadline) {
			return false, deadline.Sub(now), nil
		}
		_, err := apply(ctx, q, n, change{to: core.NodeLost, event: core.EventNodeLost,
			data: map[string]any{"unreachableSince": sess.UnreachableSince, "lostAfterSeconds": after.Seconds()}})
		return err == nil, 0, err
	}
	return false, 0, nil
}

// lostAfter is the pool's lostAfter for provider and vps-host pools that set
// it. Bare metal is never lost automatically.
func lostAfter(n db.NodeLivenessLockRow) (time.Duration, bool) {
	if (n.PoolKind != "provider" && n.PoolKind != "vps-host") || n.LostAfterSeconds == nil {
		return 0, false
	}
	return time.Duration(*n.LostAfterSeconds) * time.Second, true
}

func graceOf(reason string) time.Duration {
	switch reason {
	case "gateway-lost":
		return GatewayLostGrace
	case "outage":
		return OutageGrace
	}
	return 0
}

// unreachableReason is the NodeUnreachable condition's reason.
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
