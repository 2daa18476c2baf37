package db

import (
	"encoding/json"
	"fmt"

	"github.com/bettercompute/compute/core"
)

// Core is the API view of a node command row. Both the write side
// (commands.run) and the dispatcher (nodes) build events from it, so the
// conversion lives next to the row type rather than in either of them.
func (c NodeCommand) Core() (core.NodeCommand, error) {
	out := core.NodeCommand{ID: c.ID, Tenant: c.TenantID, NodeID: c.NodeID, IdempotencyKey: c.IdempotencyKey,
		Kind: c.Kind, RetrySafe: c.RetrySafe, MinGeneration: c.MinGeneration, State: core.State(c.State),
		ExitCode: c.ExitCode, Output: c.Output, Reason: c.Reason, Version: c.Version, CreatedAt: c.CreatedAt.UTC(),
		FinishedAt: c.FinishedAt}
	if c.AllocationID != nil {
		out.AllocationID = *c.AllocationID
	}
	if len(c.Payload) > 0 {
		if err := json.Unmarshal(c.Payload, &out.Payload); err != nil {
			return out, fmt.Errorf("decode payload of node command %s: %w", c.ID, err)
		}
	}
	return out, nil
}
