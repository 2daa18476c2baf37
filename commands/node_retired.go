package commands

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// A retired node is terminal (nodes.retire): every command that would
// change it or one of its devices is refused with CONFLICT "node X is
// retired", a repeat that would change nothing included, so the answer
// does not depend on what the node looked like when it was retired. Each
// command checks the state it read under the node's row lock, so a retire
// that commits first is seen and one that commits later waits for it.

// refuseRetired is the check, on a node row read under its lock.
func refuseRetired(nodeID, state string) error {
	if core.State(state) == core.NodeRetired {
		return core.Errorf(core.CodeConflict, "node %s is retired", nodeID)
	}
	return nil
}

// lockNodeOfDevice locks the node of device id FOR SHARE (before the
// device rows, the order every placer takes them in) and refuses a
// retired one. An unknown device passes: the command's own lookup reports
// it precisely (not found, or an atom where a GPU is wanted).
func lockNodeOfDevice(ctx context.Context, q *db.Queries, deviceID string) error {
	n, err := q.NodeLockOfDevice(ctx, deviceID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return pg.Translate(err, "node of "+deviceID)
	}
	return refuseRetired(n.ID, n.State)
}
