package db

import (
	"encoding/json"
	"fmt"

	"github.com/bettercompute/compute/core"
)

// Core is the API view of an instance row, shared by the write side
// (instances.create, instances.delete) and the daemon's reports (nodes).
func (i Instance) Core() (core.Instance, error) {
	out := core.Instance{ID: i.ID, Tenant: i.TenantID, ReservationID: i.ReservationID, AllocationID: i.AllocationID,
		NodeID: i.NodeID, State: core.State(i.State), Reason: i.Reason, Version: i.Version,
		CreatedAt: i.CreatedAt.UTC(), UpdatedAt: i.UpdatedAt.UTC()}
	if err := json.Unmarshal(i.Spec, &out.Spec); err != nil {
		return out, fmt.Errorf("decode spec of instance %s: %w", i.ID, err)
	}
	return out, nil
}
