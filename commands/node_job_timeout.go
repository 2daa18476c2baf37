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
)

// NodeJobTimeout is how long a node may be unreachable (or lost) before
// its jobs that are not assignments end timed-out, counting only time the
// control plane was up: after an outage (see OutageThreshold) the count
// starts again at the first sweep. It cannot hurt a live
// node: an unreachable node has had no session for at least
// NoSessionAfter plus its grace, and an exec the daemon runs ends by the
// daemon's own timeout (at most MaxCommandTimeout seconds, an hour) within
// an hour of being sent, so after an hour away only its report is missing.
// A retired node's jobs time out at the next sweep: its credentials are
// revoked, so nothing can answer them.
const NodeJobTimeout = time.Hour

// timeOutNodeJobs is the liveness sweep's last step: it times out, one
// transaction per node, the open jobs of every node that NodeJobTimeoutDue
// names, and returns their ids. fence, when set, is each transaction's
// first statement.
func (h *Handlers) timeOutNodeJobs(ctx context.Context, fence func(pgx.Tx) error) ([]string, error) {
	nodes, err := db.New(h.Pool).NodeJobTimeoutDue(ctx, NodeJobTimeout.Seconds())
	if err != nil {
		return nil, fmt.Errorf("node job timeout: due nodes: %w", pg.Translate(err, "node jobs"))
	}
	var ids []string
	for _, node := range nodes {
		var timed []string
		err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
			if err := fenced(tx, fence); err != nil {
				return err
			}
			timed, err = timeOutJobsOfNode(ctx, db.New(tx), node)
			return err
		})
		if err != nil {
			return ids, fmt.Errorf("node job timeout: node %s: %w", node, err)
		}
		ids = append(ids, timed...)
	}
	return ids, nil
}

// timeOutJobsOfNode times out node's open jobs that are not assignments if
// the node is still due, judged again under the node row's lock (the lock
// the liveness transitions and a session open take), so a node that came
// back after NodeJobTimeoutDue read it keeps its jobs. Each job moves
// through NodeCommandTimeOut, guarded by its version and state, writes
// node_command.timed_out and fails the instance it starts or stops.
func timeOutJobsOfNode(ctx context.Context, q *db.Queries, node string) ([]string, error) {
	n, err := q.NodeLivenessLock(ctx, node)
	if err != nil {
		return nil, pg.Translate(err, "node "+node)
	}
	reason, due, err := nodeJobTimeoutReason(ctx, q, node, core.State(n.State))
	if err != nil || !due {
		return nil, err
	}
	jobs, err := q.NodeCommandListOpenForUpdate(ctx, node)
	if err != nil {
		return nil, pg.Translate(err, "node jobs of "+node)
	}
	var ids []string
	for _, c := range jobs {
		if core.IsAssignmentJob(c.Kind) {
			continue // see NodeCommandTimeOut
		}
		rows, err := q.NodeCommandTimeOut(ctx, db.NodeCommandTimeOutParams{ID: c.ID, Version: c.Version, Reason: reason})
		if err := zeroRowsConflict(rows, err, "node command "+c.ID); err != nil {
			return nil, err
		}
		id := c.ID
		if c, err = q.NodeCommandGet(ctx, id); err != nil { // finished_at as the database set it
			return nil, pg.Translate(err, "node command "+id)
		}
		if err := emitNodeJob(ctx, q, core.CommandTimedOut, c, nil); err != nil {
			return nil, err
		}
		if err := followInstance(ctx, q, c); err != nil {
			return nil, err
		}
		ids = append(ids, c.ID)
	}
	return ids, nil
}

// nodeJobTimeoutReason says whether node, locked in state, is due for its
// jobs to time out now, and the reason its jobs then carry. The database
// decides, by its clock (NodeJobTimeoutAbsence): the node's absence counts
// from the later of when it became unreachable and when the control plane
// last came back from an outage, because a daemon cannot reconnect while
// the control plane is down, so the outage says nothing about the node.
func nodeJobTimeoutReason(ctx context.Context, q *db.Queries, node string, state core.State) (string, bool, error) {
	if state == core.NodeRetired {
		return "timed out: its node was retired, so no daemon can answer it", true, nil
	}
	if state != core.NodeUnreachable && state != core.NodeLost {
		return "", false, nil
	}
	a, err := q.NodeJobTimeoutAbsence(ctx, db.NodeJobTimeoutAbsenceParams{NodeID: node,
		AfterSeconds: NodeJobTimeout.Seconds()})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil // never marked unreachable: nothing to count from
	}
	if err != nil {
		return "", false, pg.Translate(err, "node session of "+node)
	}
	if !a.Due {
		return "", false, nil
	}
	since := a.UnreachableSince.UTC().Format(time.RFC3339)
	if a.CountedFrom.After(a.UnreachableSince) {
		since += ", counted from " + a.CountedFrom.UTC().Format(time.RFC3339) +
			" when the control plane came back from an outage"
	}
	return fmt.Sprintf("timed out: its node has been unreachable since %s (%s now), longer than the node job timeout (%s)",
		since, state, NodeJobTimeout), true, nil
}
