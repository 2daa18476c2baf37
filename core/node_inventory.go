package core

// Node inventory: what a node's daemon reports it has, reconciled with the
// node's record on every (re)connect. The machine decides what exists, the
// control plane who holds it.

// EventNodeInventoryReconciled: a daemon's GPU inventory changed the
// node's record: a recorded GPU was missing from it (its health becomes
// missing), a missing one was reported again (healthy), a new one was
// registered (also gpu.registered), or a reported model or memory differs
// from the record. Carries the node's new version and its conditions.
const EventNodeInventoryReconciled = "node.inventory_reconciled"

// Conditions the inventory reconcile raises on a node, and clears when the
// daemon's report agrees with the record again.
const (
	// ConditionGPUMissing: GPUs of the record that the daemon does not
	// report. Each is out of placement (health missing) until reported.
	ConditionGPUMissing = "GPUMissing"
	// ConditionGPUMismatch: GPUs the daemon reports with another model or
	// memory than the record has (the record is kept: an operator decides),
	// or that it cannot register (recorded on another node, or reported
	// without a model or memory).
	ConditionGPUMismatch = "GPUMismatch"
)
