package core

import "time"

// GPURequest asks for Count atoms of one kind on one node: whole GPUs
// (optionally of one Model), MIG instances of one Profile, or shared slots
// of one SlotKind (time-slice or mps).
type GPURequest struct {
	Count      int      `json:"count"`
	Model      string   `json:"model,omitempty"`
	MIGProfile string   `json:"migProfile,omitempty"`
	SlotKind   GPUMode  `json:"slotKind,omitempty"`
	Kind       AtomKind `json:"kind"`
}

// ReservationSpec is what a tenant asked for. It is stored with the
// reservation, so a pending reservation is retried against the same request.
type ReservationSpec struct {
	GPU         GPURequest `json:"gpu"`
	VCPU        int64      `json:"vcpu"`
	MemoryMB    int64      `json:"memoryMb"`
	DiskGB      int64      `json:"diskGb"`
	Tolerations []string   `json:"tolerations"`
}

// Condition is an observation about a reservation, Kubernetes style:
// Type "Unschedulable" with Status true says why placement failed.
type Condition struct {
	Type    string `json:"type"`
	Status  bool   `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// ConditionUnschedulable is set on a pending reservation; its message says,
// node by node, why none could take it.
const ConditionUnschedulable = "Unschedulable"

// ConditionPreempted is set on a reservation that was preempted: Reason
// "PreemptedByHigherPriority", Message names the preemptor, its class and
// priority, and the grace its workloads got.
const ConditionPreempted = "Preempted"

// ConditionAssignmentFailed is set on a reservation that failed because
// its node's daemon did not take its assignment: Reason "Refused" when the
// daemon holds one of its devices for an overlapping window, "Rejected"
// when it found the assignment invalid (an unknown device, a bad payload);
// Message is the daemon's reason.
const ConditionAssignmentFailed = "AssignmentFailed"

// Reservation is the write model's view of a reservation, as commands
// return it.
type Reservation struct {
	ID         string           `json:"id"`
	Tenant     string           `json:"tenant"`
	State      State            `json:"state"`
	PoolID     string           `json:"poolId,omitempty"`
	SiteID     string           `json:"siteId,omitempty"`
	Spec       ReservationSpec  `json:"spec"`
	Start      time.Time        `json:"start"`
	End        time.Time        `json:"end"`
	Charges    map[string]int64 `json:"charges"`
	Conditions []Condition      `json:"conditions"`
	// NodeID and DeviceIDs say where it was placed, when booked or active.
	NodeID    string   `json:"nodeId,omitempty"`
	DeviceIDs []string `json:"deviceIds,omitempty"`
	Version   int64    `json:"version"`
	// PriorityClass is the reservation's priority class; Priority and
	// Preemptible are the class's value and flag, copied when the
	// reservation was created (docs/concepts/priority.md).
	PriorityClass string `json:"priorityClass,omitempty"`
	Priority      int32  `json:"priority"`
	Preemptible   bool   `json:"preemptible"`
}
