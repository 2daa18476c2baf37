package core

// GPURegisteredEventData is the data of gpu.registered, written once per
// GPU when its node is registered, and when a daemon's inventory reports a
// GPU the record lacks: the new GPU, healthy and not quarantined, at
// version 1.
type GPURegisteredEventData struct {
	// ID is the GPU's UUID.
	ID     string    `json:"id"`
	NodeID string    `json:"nodeId"`
	Model  string    `json:"model"`
	Layout GPULayout `json:"layout"`
	// Health is healthy or unhealthy.
	Health      string `json:"health"`
	Quarantined bool   `json:"quarantined"`
	Version     int64  `json:"version"`
}

// GPUModeChangedEventData is the data of gpu.mode_changed, written when an
// operator changes a GPU's sharing layout.
type GPUModeChangedEventData struct {
	ID     string    `json:"id"`
	NodeID string    `json:"nodeId"`
	Layout GPULayout `json:"layout"`
	// Atoms are the ids of the GPU's bookable units under the new layout
	// (empty for exclusive).
	Atoms   []string `json:"atoms"`
	Version int64    `json:"version"`
}

// DeviceStatusEventData is the data of device.quarantined,
// device.unquarantined (an operator's change) and device.health_changed (an
// operator's change, or a daemon's inventory finding a GPU missing or back):
// the GPU's status after the change.
type DeviceStatusEventData struct {
	ID     string `json:"id"`
	NodeID string `json:"nodeId"`
	// Health is healthy, unhealthy or missing (the node's daemon does not
	// report the GPU).
	Health      string `json:"health"`
	Quarantined bool   `json:"quarantined"`
	Version     int64  `json:"version"`
	// Reason is GPUMissing or GPUReported when a daemon's inventory changed
	// the health; empty for an operator's change.
	Reason string `json:"reason,omitempty"`
}
