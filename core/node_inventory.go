package core

// Node inventory: what a node's daemon reports it has, reconciled with the
// node's record on every (re)connect. The machine decides what exists, the
// control plane who holds it.

// EventNodeInventoryReconciled: a daemon's inventory changed the node's
// record: a recorded GPU was missing from it (its health becomes missing),
// a missing one was reported again (healthy), a new one was registered
// (also gpu.registered), a reported model or memory differs from the
// record, the daemon began or stopped refusing workloads, or its
// configured vCPU, memory or disk was adopted or refused. Carries the
// node's new version, its conditions and, when they changed, its scalars.
const EventNodeInventoryReconciled = "node.inventory_reconciled"

// Conditions the inventory reconcile raises on a node, and clears when the
// daemon's report agrees with the record again.
const (
	// ConditionGPUMissing: GPUs of the record that the daemon does not
	// report. Each is out of placement (health missing) until reported.
	ConditionGPUMissing = "GPUMissing"
	// ConditionGPUMismatch: GPUs the daemon reports with another model or
	// memory than the record has, or in MIG mode while the record shares
	// them whole or in slots (the record is kept: an operator decides),
	// or that it cannot register (recorded on another node, or reported
	// without a model or memory).
	ConditionGPUMismatch = "GPUMismatch"
	// ConditionWorkloadsRefused: the daemon refuses every tenant workload
	// because it cannot isolate them (not root, no runc, a cgroup
	// controller or a CDI spec missing); the message is the daemon's
	// reason. Its assignments are still taken (placement is unchanged),
	// but every instance and node job on it fails, so an operator fixes
	// the machine or drains it. Cleared by a report without a reason.
	ConditionWorkloadsRefused = "WorkloadsRefused"
	// ConditionDiskNotEnforced: the daemon runs workloads but cannot hold
	// an allocation to its disk at once (no file system of its size for
	// its /work: no loop devices or mkfs.ext4 on the node): it measures
	// every 10 s (reason Measured), so an allocation can overshoot in
	// between and fill the node's disk for its other tenants meanwhile;
	// or it limits nothing (reason NotIsolated, --workload-isolation=none,
	// a development machine). Informational: placement is unchanged.
	// Cleared by a report of a file system limit.
	ConditionDiskNotEnforced = "DiskNotEnforced"
	// ConditionScalarsMismatch: the daemon's configured vCPU, memory or
	// disk (--vcpu, --memory-mb, --disk-gb given) differs from the node's
	// record and was not adopted: the node's live and future bookings hold
	// more than the new value would give (reason BookingsDoNotFit), or the
	// value is out of range (reason OutOfRange). The record stays. A
	// shrink refused for the bookings waits: the placer books new
	// reservations against it meanwhile, and the node's periodic resync
	// adopts it once the bookings fit, which clears it; the daemon's next
	// report replaces it (one that can be adopted, or that agrees, clears
	// it).
	ConditionScalarsMismatch = "ScalarsMismatch"
)
