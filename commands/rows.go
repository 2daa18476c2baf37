package commands

import (
	"encoding/json"
	"fmt"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// instanceView is the API view of an instance row, shared by the commands
// that create, delete and report on instances.
func instanceView(i db.Instance) (core.Instance, error) {
	out := core.Instance{ID: i.ID, Tenant: i.TenantID, ReservationID: i.ReservationID, AllocationID: i.AllocationID,
		NodeID: i.NodeID, State: core.State(i.State), Reason: i.Reason, ExitCode: i.ExitCode, Version: i.Version,
		CreatedAt: i.CreatedAt.UTC(), UpdatedAt: i.UpdatedAt.UTC()}
	if err := json.Unmarshal(i.Spec, &out.Spec); err != nil {
		return out, fmt.Errorf("decode spec of instance %s: %w", i.ID, err)
	}
	return out, nil
}

// nodeCommandView is the API view of a node command row, shared by the
// command that runs a node command and the one that records its result.
func nodeCommandView(c db.NodeCommand) (core.NodeCommand, error) {
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
