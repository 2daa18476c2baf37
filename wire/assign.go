package wire

import "time"

// Node job kinds that carry assignments. The control plane delivers an
// allocation's devices to the daemon as an "assign" node job (Message of
// TypeCommand, CommandKind "assign", Payload an AssignPayload) and takes
// them back with an "unassign" job (Payload an UnassignPayload). Their
// results (TypeCommandResult) carry the daemon's ObservedGeneration.
const (
	CommandKindAssign   = "assign"
	CommandKindUnassign = "unassign"
)

// Message types added with node-job assignments.
const (
	// TypeInventory (daemon → gateway) follows TypeReplay on every
	// (re)connect; its Payload is a NodeState. Message.JournalID and
	// Message.ObservedGeneration are set too.
	TypeInventory = "inventory"
	// TypeInstanceStopped (daemon → gateway) reports an instance the daemon
	// stopped on its own: because its allocation was unassigned, or because
	// the watchdog found it running outside an assignment or past its end.
	// Message.AllocationID is set and the Payload is an InstanceStopped.
	// Message.ReportID names it. To a gateway whose welcome says
	// ReportAcks, the daemon keeps it (across its restarts too) and sends
	// it again at each session's open, before its inventory, until a
	// TypeReportAck names it; to one that does not, it is sent once. A
	// duplicate is harmless: an instance's end is recorded once.
	TypeInstanceStopped = "instance.stopped"
	// TypeReportAck (gateway → daemon) answers a report that carries a
	// Message.ReportID once the report is recorded (its transaction
	// committed) or refused for good (it names no instance of the node, or
	// is malformed): the daemon forgets it. A report whose recording failed
	// otherwise (the database unreachable, the session superseded) is not
	// answered, and the daemon sends it again on its next session.
	TypeReportAck = "report.ack"
)

// Refusal prefix: an assign the daemon refuses because it conflicts with
// what it holds fails with a Reason starting with RefusedPrefix; a failure
// for any other reason (a malformed payload, an unknown device) does not.
const RefusedPrefix = "refused: "

// NotOnThisNode ends the reason of an assign the daemon rejects because a
// device's GPU is not in its inventory ("… GPU <id> is not one of this
// node's"): the GPU is recorded on the node but the machine does not have
// it now (it went missing, or the daemon restarted with fewer). The
// control plane keeps the booking and sends the assign again once the GPU
// is reported, rather than failing the reservation.
const NotOnThisNode = "is not one of this node's"

// AssignPayload is the payload of an "assign" node job: an allocation's
// devices, scalars and window on this node. Delivering the same allocation
// again is a success; a changed payload for it (an extension) replaces the
// one the daemon holds.
type AssignPayload struct {
	AllocationID  string           `json:"allocationId"`
	ReservationID string           `json:"reservationId"`
	Devices       []AssignedDevice `json:"devices"`
	VCPU          int64            `json:"vcpu"`
	MemoryMB      int64            `json:"memoryMb"`
	DiskGB        int64            `json:"diskGb"`
	// Start and End are the window [Start, End), half-open.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Generation is the node's desired-spec generation this assignment
	// belongs to.
	Generation int64 `json:"generation"`
	// Network is the allocation's network mode, its pool's: NetworkNone
	// ("" too), NetworkBridge or NetworkHost.
	Network string `json:"network,omitempty"`
}

// Network modes of an allocation's workloads.
const (
	// NetworkNone: a network namespace of its own with only loopback.
	NetworkNone = "none"
	// NetworkBridge: a network namespace of its own with an address on the
	// node's bridge and a route out (NAT), through the CNI plugins; the
	// node's own addresses, link-local and cloud metadata addresses, the
	// control plane and other allocations are refused.
	NetworkBridge = "bridge"
	// NetworkHost: the node's own network, for pools with one tenant only:
	// the workload can reach what the node can, its loopback included.
	NetworkHost = "host"
)

// AssignedDevice is one bookable atom of an allocation.
type AssignedDevice struct {
	// ID is the control plane's device id (a GPU UUID, a MIG instance id,
	// or <uuid>/s<k> for a slot).
	ID string `json:"id"`
	// GPU is the physical GPU's UUID.
	GPU string `json:"gpu"`
	// Kind is "gpu", "mig" or "slot".
	Kind string `json:"kind"`
	// Visible is what goes into CUDA_VISIBLE_DEVICES and
	// NVIDIA_VISIBLE_DEVICES: the GPU UUID, the MIG instance UUID, or the
	// parent GPU UUID for a slot.
	Visible string `json:"visible"`
	// Mode is, for slots, "time-slice" or "mps".
	Mode string `json:"mode,omitempty"`
}

// UnassignPayload is the payload of an "unassign" node job. The daemon
// stops every workload of the allocation (SIGTERM to its process group, a
// grace period, then SIGKILL), reports each stopped instance
// (TypeInstanceStopped), and only then succeeds. Unassigning an allocation
// the daemon does not hold succeeds.
type UnassignPayload struct {
	AllocationID string `json:"allocationId"`
	Reason       string `json:"reason"`
	Generation   int64  `json:"generation"`
	// GraceSeconds, when set, is how long the allocation's workloads get
	// between SIGTERM and SIGKILL: a preempted reservation's class grace.
	// Absent, the daemon's own stop grace applies.
	GraceSeconds *int32 `json:"graceSeconds,omitempty"`
}

// StopReason is the reason an instance the unassign stops ends with:
// "allocation unassigned", then the unassign's own reason. The daemon
// reports its instances with it, and the control plane stops the ones the
// daemon did not report with the same words, so an instance's reason does
// not depend on which of the two arrived first.
func (p UnassignPayload) StopReason() string {
	if p.Reason == "" {
		return "allocation unassigned"
	}
	return "allocation unassigned: " + p.Reason
}

// Grace is the stop grace the unassign asks for, or def when it names none.
func (p UnassignPayload) Grace(def time.Duration) time.Duration {
	if p.GraceSeconds == nil || *p.GraceSeconds < 0 {
		return def
	}
	return time.Duration(*p.GraceSeconds) * time.Second
}

// NodeState is the Payload of a TypeInventory message: what the daemon
// holds and runs right now. The daemon sends the whole of it after every
// (re)connect; while a session stays open it sends the machine's part
// again whenever that changes (a GPU gone or back, the sandbox broken or
// repaired), with Assignments and Instances null: a report that judges
// neither, so that it never races the node jobs in flight.
type NodeState struct {
	// Assignments are the allocations the daemon holds, by allocation id;
	// null in a report of the machine only (not an empty list: that says
	// it holds none).
	Assignments []AssignPayload `json:"assignments"`
	// Instances are the instance processes running now; null in a report
	// of the machine only.
	Instances []RunningInstance `json:"instances"`
	// ObservedGeneration is the highest Generation of an assign or unassign
	// the daemon accepted.
	ObservedGeneration int64 `json:"observedGeneration"`
	// GPUs is the node's inventory as the daemon sees it (nvidia-smi, or
	// the fake inventory).
	GPUs []InventoryGPU `json:"gpus"`
	// WorkloadsRefused says why the daemon refuses every tenant workload
	// (it cannot isolate them: not root, no runc, a cgroup controller or
	// a CDI spec missing); "" when it runs them.
	WorkloadsRefused string `json:"workloadsRefused,omitempty"`
	// DiskLimit says how the daemon holds an allocation to its disk:
	// DiskLimitFilesystem (its /work is a file system of that size),
	// DiskLimitMeasured (only measured, every 10 s: it can overshoot in
	// between) or DiskLimitNone (--workload-isolation=none). "" from a
	// daemon of a release before it was reported.
	DiskLimit string `json:"diskLimit,omitempty"`
	// Scalars are the vCPU, memory and disk the daemon's operator
	// configured (--vcpu, --memory-mb, --disk-gb given on its command
	// line), which the control plane adopts when the node's bookings fit
	// them. Null from a daemon given none, or of a release before they
	// were reported: the node keeps what it has.
	Scalars *NodeScalars `json:"scalars,omitempty"`
}

// NodeScalars are a daemon's configured scalars; each is null when its
// flag was not given (the default is no statement about the machine).
type NodeScalars struct {
	VCPU     *int64 `json:"vcpu,omitempty"`
	MemoryMB *int64 `json:"memoryMb,omitempty"`
	DiskGB   *int64 `json:"diskGb,omitempty"`
}

// The disk limits a daemon reports (NodeState.DiskLimit).
const (
	DiskLimitFilesystem = "filesystem"
	DiskLimitMeasured   = "measured"
	DiskLimitNone       = "none"
)

// RunningInstance is an instance process running on the node.
type RunningInstance struct {
	InstanceID   string `json:"instanceId"`
	AllocationID string `json:"allocationId"`
	PID          int    `json:"pid"`
}

// InventoryGPU is one physical GPU of the node.
type InventoryGPU struct {
	UUID string `json:"uuid"`
	// Name is the product name as the driver reports it ("NVIDIA H100 80GB
	// HBM3"); Model is the fleet's model name derived from it
	// ("H100-80GB"), the one pools and quotas use.
	Name     string `json:"name,omitempty"`
	Model    string `json:"model"`
	MemoryMB int64  `json:"memoryMb"`
	// MIGEnabled is the GPU's current MIG mode; MIG lists its instances.
	MIGEnabled bool           `json:"migEnabled,omitempty"`
	MIG        []InventoryMIG `json:"mig,omitempty"`
	// MIGCapable is whether the GPU can do MIG at all: false when the
	// driver reports its MIG mode as N/A. Absent from fake GPUs and from
	// daemons that predate it; the control plane then judges by the model.
	MIGCapable *bool `json:"migCapable,omitempty"`
}

// InventoryMIG is one MIG instance of a GPU, as nvidia-smi -L lists it.
type InventoryMIG struct {
	UUID    string `json:"uuid"`    // MIG-…, what CUDA_VISIBLE_DEVICES names
	Profile string `json:"profile"` // e.g. "1g.5gb"
	Index   int    `json:"index"`   // the "Device N" index under its GPU
}

// InstanceStopped is the Payload of a TypeInstanceStopped message.
type InstanceStopped struct {
	InstanceID   string    `json:"instanceId"`
	AllocationID string    `json:"allocationId"`
	Reason       string    `json:"reason"`
	PID          int       `json:"pid,omitempty"`
	At           time.Time `json:"at"`
	// Exited is set when the instance's process ended on its own rather
	// than being stopped by the daemon. ExitCode is then its exit status
	// (128+n when signal n ended it): 0 is a success, anything else a
	// failure. Reason is ReasonOOMKilled when the kernel's OOM killer ended
	// it inside its allocation's memory limit.
	Exited   bool   `json:"exited,omitempty"`
	ExitCode *int32 `json:"exitCode,omitempty"`
}

// Reasons a daemon gives for a workload that ended.
const (
	// ReasonOOMKilled: the allocation's memory limit was reached and the
	// kernel killed the workload (inside the allocation only).
	ReasonOOMKilled = "OOMKilled"
	// ReasonDiskExceeded: the allocation's work directory outgrew its
	// diskGb; its workloads were stopped.
	ReasonDiskExceeded = "DiskExceeded"
)
