package core

import "time"

// Event types of instances, one per transition of the provision state
// table, each carrying the instance's new "version". They go to the
// instance's tenant.
const (
	EventInstanceRequested    = "instance.requested"
	EventInstanceProvisioning = "instance.provisioning"
	EventInstanceRunning      = "instance.running"
	EventInstanceStopping     = "instance.stopping"
	EventInstanceStopped      = "instance.stopped"
	EventInstanceFailed       = "instance.failed"
	EventInstanceSucceeded    = "instance.succeeded"
)

// InstanceEvents maps each provision state onto the event of entering it.
func InstanceEvents() map[State]string {
	return map[State]string{
		ProvisionRequested: EventInstanceRequested, ProvisionProvisioning: EventInstanceProvisioning,
		ProvisionRunning: EventInstanceRunning, ProvisionStopping: EventInstanceStopping,
		ProvisionStopped: EventInstanceStopped, ProvisionFailed: EventInstanceFailed,
		ProvisionSucceeded: EventInstanceSucceeded,
	}
}

// Node command kinds that carry out instances. Only instances.create and
// instances.delete write them; commands.run refuses them.
const (
	NodeCommandInstanceStart = "instance-start"
	NodeCommandInstanceStop  = "instance-stop"
)

// InstanceSubject names an instance as an event subject.
func InstanceSubject(id string) string { return "instances/" + id }

// InstanceSpec is what an instance runs. With the fake inventory the daemon
// runs Command (sh -c; default a long sleep) as the workload's stand-in.
type InstanceSpec struct {
	Image   string `json:"image,omitempty"`
	Command string `json:"command,omitempty"`
}

// Instance is a workload on a reservation's devices, as the API shows it.
type Instance struct {
	ID            string       `json:"id"`
	Tenant        string       `json:"tenant"`
	ReservationID string       `json:"reservationId"`
	AllocationID  string       `json:"allocationId"`
	NodeID        string       `json:"nodeId"`
	Spec          InstanceSpec `json:"spec"`
	State         State        `json:"state"`
	Reason        string       `json:"reason,omitempty"`
	// ExitCode is the workload's exit status once its process exited on
	// its own (succeeded: 0; failed: anything else); absent otherwise.
	ExitCode  *int32    `json:"exitCode,omitempty"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}
