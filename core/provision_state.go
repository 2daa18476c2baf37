package core

// Provision states: an instance being set up on a booked reservation.
const (
	ProvisionRequested    State = "requested"
	ProvisionProvisioning State = "provisioning"
	ProvisionRunning      State = "running"
	ProvisionStopping     State = "stopping"
	ProvisionStopped      State = "stopped"
	ProvisionFailed       State = "failed"
	// ProvisionSucceeded: the workload's process exited on its own with
	// status 0.
	ProvisionSucceeded State = "succeeded"
)

// provisionStateTable is the instance lifecycle: requested → provisioning →
// running → stopping → stopped, with failure possible before stopped. A
// workload whose process exits on its own ends succeeded (status 0) or
// failed, from provisioning or running.
var provisionStateTable = StateTable{
	Name: "provision",
	States: []State{ProvisionRequested, ProvisionProvisioning, ProvisionRunning,
		ProvisionStopping, ProvisionStopped, ProvisionFailed, ProvisionSucceeded},
	Terminal: map[State]bool{ProvisionStopped: true, ProvisionFailed: true, ProvisionSucceeded: true},
	Next: map[State][]State{
		StateNone:             {ProvisionRequested},
		ProvisionRequested:    {ProvisionProvisioning, ProvisionStopping, ProvisionFailed},
		ProvisionProvisioning: {ProvisionRunning, ProvisionStopping, ProvisionFailed, ProvisionSucceeded},
		ProvisionRunning:      {ProvisionStopping, ProvisionFailed, ProvisionSucceeded},
		ProvisionStopping:     {ProvisionStopped, ProvisionFailed},
	},
}

// ProvisionStateTable returns the instance lifecycle table.
func ProvisionStateTable() StateTable { return provisionStateTable }
