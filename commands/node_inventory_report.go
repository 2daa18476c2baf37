package commands

// What a node's daemon reports in its inventory message, as the gateway
// hands it to ReconcileNodeInventory (node_inventory_reconcile.go).

// ReportedGPU is one GPU as a node's daemon reports it in its inventory
// (nvidia-smi, or the fake inventory): the gateway converts the wire form
// into this, so that commands does not depend on the protocol.
type ReportedGPU struct {
	UUID string
	// Name is the product name the driver reports ("NVIDIA H100 80GB
	// HBM3"); Model the fleet's name for it ("H100-80GB").
	Name     string
	Model    string
	MemoryMB int64
	// MIG lists the GPU's MIG instances, as nvidia-smi -L does.
	MIG []ReportedMIG
	// MIGEnabled is the GPU's MIG mode as the driver reports it
	// (nvidia-smi's mig.mode.current); fake GPUs never report it.
	MIGEnabled bool
	// MIGCapable is whether the GPU can do MIG at all (its MIG mode is not
	// N/A); nil from fake GPUs and from daemons that do not say, whose GPUs
	// are judged by their model (core.MIGComputeSlices).
	MIGCapable *bool
}

// ReportedMIG is one MIG instance of a reported GPU.
type ReportedMIG struct {
	UUID    string // MIG-…, what CUDA_VISIBLE_DEVICES names
	Profile string // e.g. "1g.10gb"
	Index   int    // its "Device N" index under its GPU
}

// NodeInventory is what a node's daemon reports in its inventory message
// that the node's record reconciles with: its GPUs, and whether it runs
// tenants' workloads.
type NodeInventory struct {
	GPUs []ReportedGPU
	// WorkloadsRefused is why the daemon refuses every tenant workload (it
	// cannot isolate them); "" when it runs them. It becomes the message of
	// the node's WorkloadsRefused condition, cut to
	// WorkloadsRefusedMaxBytes.
	WorkloadsRefused string
	// DiskLimit is how the daemon holds allocations to their disk
	// (wire.DiskLimitFilesystem, Measured or None; "" from a daemon that
	// does not say): Measured and None raise the node's DiskNotEnforced
	// condition while it runs workloads.
	DiskLimit string
	// Scalars are the vCPU, memory and disk the daemon's operator
	// configured (nil: none given, or a daemon that does not say): each
	// that differs from the record is adopted when the node's bookings fit
	// it (reconcileScalars), else the ScalarsMismatch condition says why
	// and the shrink waits for the node's resync (retryPendingScalars).
	Scalars *ReportedScalars
}

// WorkloadsRefusedMaxBytes bounds the daemon's reason kept in the
// WorkloadsRefused condition: the node row, its events and every node read
// carry it, and a daemon's text is not trusted to be short.
const WorkloadsRefusedMaxBytes = 1024
