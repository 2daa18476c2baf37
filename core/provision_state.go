package core

// Provision states: an instance being set up on a booked reservation.
const (
	ProvisionRequested    State = "requested"
	ProvisionProvisioning State = "provisioning"
	ProvisionRunning      State = "running"
	ProvisionStopping     State = "stopping"
	ProvisionStopped      State = "stopped"
	ProvisionFailed       State = "failed"
)

// provisionStateTable is the instance lifecycle: requested → provisioning →
// running → stopping → stopped, with failure possible before stopped.
var provisionStateTable = StateTable{
	Name: "provision",
	States: []State{ProvisionRequested, ProvisionProvisioning, ProvisionRunning,
		ProvisionStopping, ProvisionStopped, ProvisionFailed},
	Terminal: map[State]bool{ProvisionStopped: true, ProvisionFailed: true},
	Next: map[State][]State{
		StateNone:             {ProvisionRequested},
		ProvisionRequested:    {ProvisionProvisioning, ProvisionStopping, ProvisionFailed},
		ProvisionProvisioning: {ProvisionRunning, ProvisionStopping, ProvisionFailed},
		ProvisionRunning:      {ProvisionStopping, ProvisionFailed},
		ProvisionStopping:     {ProvisionStopped, ProvisionFailed},
	},
}

// ProvisionStateTable returns the instance lifecycle table.
func ProvisionStateTable() StateTable { return provisionStateTable }
