package commands

import "context"

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
