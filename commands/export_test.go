package commands

import (
	"context"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// The reconcilers' results, which their work-queue handlers keep to
// themselves, for the tests of this package: unfenced, in simulated time.

// SweepNodeLiveness runs the liveness sweep once and says what it did.
func (h *Handlers) SweepNodeLiveness(ctx context.Context) (LivenessSweepResult, error) {
	return h.sweepNodeLiveness(ctx, nil)
}

// ResyncNode runs the node's assignment resync once and says what it
// queued.
func (h *Handlers) ResyncNode(ctx context.Context, nodeID string) (AssignmentReconcile, bool, error) {
	return h.resyncNode(ctx, nodeID, nil)
}

// ReleaseListed runs the releases of nodes.release over ids, a list read
// before (possibly stale), and returns what it released.
func (h *Handlers) ReleaseListed(ctx context.Context, actor core.Actor, ids []string) ([]string, error) {
	res := NodeLifecycleResult{Released: []string{}}
	err := h.releaseListed(ctx, db.New(h.Pool), actor, ids, &res)
	return res.Released, err
}
