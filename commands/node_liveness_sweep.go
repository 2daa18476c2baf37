package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
)

// LivenessSweepResult says what one liveness sweep did, for logs and
// tests.
type LivenessSweepResult struct {
	// Outage is set when the previous sweep was longer than
	// OutageThreshold ago: the database or every controller was down.
	Outage bool
	// GatewayLost lists nodes whose session ended with its gateway's lease.
	GatewayLost []string
	// Transitioned lists nodes that became unreachable or lost.
	Transitioned []string
	// TimedOut lists the node jobs that timed out (NodeJobTimeout).
	TimedOut []string
}

// sweepNodeLiveness is the liveness controller's periodic pass (work-queue
// kind KindNodeLivenessSweep, every LivenessSweepEvery). It
//
//  1. moves the controller heartbeat and detects an outage: a gap above
//     OutageThreshold means nobody could judge liveness meanwhile, so every
//     node without a session restarts its clock now with the 5-minute grace,
//     and the absence of unreachable nodes counts for their pool's
//     lostAfter and for NodeJobTimeout from now
//     (node_liveness_sweeps.outage_ended_at);
//  2. ends the sessions of gateways that lost their lease (disconnected,
//     with the 120 s gateway grace, or the outage grace after an outage);
//  3. applies every unreachable or lost transition that is due;
//  4. times out the jobs no daemon can answer any more (NodeJobTimeout):
//     those of nodes unreachable or lost for longer than it, or retired.
//
// Per-node KindNodeLiveness items make transitions happen on time between
// sweeps; the sweep is the level-triggered backstop. fence, when set, is
// the first statement of each of its transactions; workers run it as
// Reconcilers.NodeLivenessSweep.
func (h *Handlers) sweepNodeLiveness(ctx context.Context, fence func(pgx.Tx) error) (LivenessSweepResult, error) {
	var res LivenessSweepResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		if err := fenced(tx, fence); err != nil {
			return err
		}
		q := db.New(tx)
		gap, err := q.NodeLivenessHeartbeat(ctx)
		if err != nil {
			return pg.Translate(err, "liveness heartbeat")
		}
		res.Outage = gap > OutageThreshold.Seconds()
		if res.Outage {
			if err := q.NodeLivenessOutageEnded(ctx); err != nil {
				return pg.Translate(err, "outage end")
			}
			_, err = q.NodeSessionOutageGrace(ctx)
			return pg.Translate(err, "outage grace")
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("liveness sweep: %w", err)
	}
	if res.Outage {
		h.logger().Warn("liveness: controller or database outage detected; disconnected nodes get the outage grace",
			"grace", OutageGrace.String())
	}
	lost, err := db.New(h.Pool).NodeSessionsOfLostGateways(ctx)
	if err != nil {
		return res, fmt.Errorf("liveness sweep: lost gateways: %w", err)
	}
	for _, l := range lost {
		if err := h.markGatewayLost(ctx, l.NodeID, l.SessionEpoch, l.LostAt, res.Outage, fence); err != nil {
			return res, fmt.Errorf("liveness sweep: %w", err)
		}
		res.GatewayLost = append(res.GatewayLost, l.NodeID)
	}
	due, err := db.New(h.Pool).NodeLivenessDue(ctx, db.NodeLivenessDueParams{
		NoSessionSeconds: NoSessionAfter.Seconds(), GatewayGraceSeconds: GatewayLostGrace.Seconds(),
		OutageGraceSeconds: OutageGrace.Seconds()})
	if err != nil {
		return res, fmt.Errorf("liveness sweep: due nodes: %w", err)
	}
	for _, id := range due {
		changed, _, err := h.reconcileLiveness(ctx, id, fence)
		if err != nil {
			return res, fmt.Errorf("liveness sweep: %w", err)
		}
		if changed {
			res.Transitioned = append(res.Transitioned, id)
		}
	}
	res.TimedOut, err = h.timeOutNodeJobs(ctx, fence)
	if err != nil {
		return res, fmt.Errorf("liveness sweep: %w", err)
	}
	return res, nil
}

// NodeLivenessSweep is the KindNodeLivenessSweep work-queue handler:
// the sweep, every transaction of it fenced by the item's shard lease, so
// that a worker that lost the shard neither moves the heartbeat nor judges
// a node.
func (r Reconcilers) NodeLivenessSweep(ctx context.Context, it workqueue.Item) error {
	res, err := r.h.sweepNodeLiveness(ctx, fenceOf(ctx, it))
	if err != nil {
		return err
	}
	if len(res.GatewayLost) > 0 || len(res.Transitioned) > 0 || len(res.TimedOut) > 0 {
		r.h.logger().Info("liveness sweep", "gateway_lost", res.GatewayLost, "transitioned", res.Transitioned,
			"timed_out", res.TimedOut)
	}
	return workqueue.Again(LivenessSweepEvery)
}

// EnsureNodeLivenessSweep enqueues the sweep item if it is missing.
// Workers call it at start; enqueueing an existing item keeps its due time.
func (h *Handlers) EnsureNodeLivenessSweep(ctx context.Context) error {
	return workqueue.Enqueue(ctx, db.New(h.Pool), KindNodeLivenessSweep, LivenessSweepKey, 0)
}

// markGatewayLost ends a session whose gateway lost its lease at lostAt,
// with the gateway-lost grace (or the outage grace after an outage),
// fenced by fence when set.
func (h *Handlers) markGatewayLost(ctx context.Context, nodeID string, epoch int64, lostAt time.Time, outage bool,
	fence func(pgx.Tx) error) error {
	grace, reason, wait := "gateway-lost", "gateway-lost", NoSessionAfter+GatewayLostGrace
	if outage {
		grace, wait = "outage", NoSessionAfter+OutageGrace
	}
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		if err := fenced(tx, fence); err != nil {
			return err
		}
		q := db.New(tx)
		n, err := q.NodeLivenessLock(ctx, nodeID)
		if err != nil {
			return pg.Translate(err, "node "+nodeID)
		}
		if outage {
			if lostAt, err = q.NodeLivenessNow(ctx); err != nil {
				return pg.Translate(err, "clock")
			}
		}
		rows, err := q.NodeSessionGatewayLost(ctx, db.NodeSessionGatewayLostParams{NodeID: nodeID,
			SessionEpoch: epoch, LostAt: lostAt, GraceReason: grace})
		if err != nil || rows == 0 {
			return pg.Translate(err, "node session") // 0 rows: reconnected meanwhile
		}
		return disconnect(ctx, q, n, reason, epoch, wait)
	})
	if err != nil {
		return fmt.Errorf("gateway lost for node %s: %w", nodeID, err)
	}
	return nil
}
