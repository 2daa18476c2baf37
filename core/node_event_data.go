package core

import "time"

// The data of node events: node.registered, the scheduling events
// (cordon, taint), the liveness events, drain, retire and the inventory
// reconcile. Each carries the node's new version.

// NodeCondition is a condition raised on a node, with when it was raised
// (NodeUnreachable, GPUMissing, GPUMismatch, WorkloadsRefused).
type NodeCondition struct {
	Condition
	Since time.Time `json:"since"`
}

// NodeRegisteredEventData is the data of node.registered, written when an
// operator registers a node with its inventory (its GPUs each get a
// gpu.registered after it).
type NodeRegisteredEventData struct {
	ID       string   `json:"id"`
	PoolID   string   `json:"poolId"`
	Cordoned bool     `json:"cordoned"`
	Taints   []string `json:"taints"`
	// VCPU is the allocatable vCPU, before the pool's overcommit ratio.
	VCPU     int64 `json:"vcpu"`
	MemoryMB int64 `json:"memoryMb"`
	DiskGB   int64 `json:"diskGb"`
	Version  int64 `json:"version"`
}

// NodeSchedulingEventData is the data of node.cordoned, node.uncordoned,
// node.tainted and node.untainted, written when an operator changes a
// node's scheduling: the node's cordon and taints after the change.
type NodeSchedulingEventData struct {
	ID       string   `json:"id"`
	Cordoned bool     `json:"cordoned"`
	Taints   []string `json:"taints"`
	Version  int64    `json:"version"`
}

// NodeLivenessEventData is the common part of the data of node.connected,
// node.disconnected, node.unreachable and node.lost: the node after a
// liveness transition.
type NodeLivenessEventData struct {
	ID                string          `json:"id"`
	PoolID            string          `json:"poolId"`
	State             State           `json:"state"`
	PreviousState     State           `json:"previousState"`
	NoScheduleReasons []string        `json:"noScheduleReasons"`
	Conditions        []NodeCondition `json:"conditions"`
	Version           int64           `json:"version"`
}

// NodeConnectedEventData is the data of node.connected, written when a
// daemon opens a session and its node was not connected.
type NodeConnectedEventData struct {
	NodeLivenessEventData
	SessionEpoch int64  `json:"sessionEpoch"`
	GatewayID    string `json:"gatewayId"`
}

// NodeDisconnectedEventData is the data of node.disconnected, written when
// a node's session closes or its gateway is lost.
type NodeDisconnectedEventData struct {
	NodeLivenessEventData
	// Reason is closed, gateway-lost or revoked.
	Reason       string `json:"reason"`
	SessionEpoch int64  `json:"sessionEpoch"`
}

// NodeUnreachableEventData is the data of node.unreachable, written when a
// node has been without a session past the threshold and grace.
type NodeUnreachableEventData struct {
	NodeLivenessEventData
	// Reason is NeverJoined, NeverConnected, GatewayLost, Outage or
	// SessionClosed.
	Reason            string    `json:"reason"`
	DisconnectedSince time.Time `json:"disconnectedSince"`
}

// NodeLostEventData is the data of node.lost, written when a provider or
// vps-host node stays unreachable past its pool's lostAfter.
type NodeLostEventData struct {
	NodeLivenessEventData
	UnreachableSince time.Time `json:"unreachableSince"`
	// LostAfterSeconds is the pool's lostAfter.
	LostAfterSeconds float64 `json:"lostAfterSeconds"`
	// CountedFrom is when the node's absence started to count towards
	// lostAfter, set only when that is not UnreachableSince: the end of a
	// control-plane outage that came later (a daemon cannot reconnect while
	// the control plane is down, so the outage is not counted). It says why
	// the node was lost later than UnreachableSince + LostAfterSeconds.
	CountedFrom *time.Time `json:"countedFrom,omitempty"`
}

// NodeDrainEventData is the data of node.draining and node.undrained,
// written when an operator drains a node or lets new bookings back on it.
type NodeDrainEventData struct {
	ID                string   `json:"id"`
	State             State    `json:"state"`
	NoScheduleReasons []string `json:"noScheduleReasons"`
	Version           int64    `json:"version"`
}

// NodeRetiredEventData is the data of node.retired, written when an
// operator retires a node.
type NodeRetiredEventData struct {
	ID            string `json:"id"`
	State         State  `json:"state"`
	PreviousState State  `json:"previousState"`
	Version       int64  `json:"version"`
}

// NodeInventoryReconciledEventData is the data of
// node.inventory_reconciled, written when a daemon's inventory changed its
// node's record: the node after the reconcile (its state unchanged, its
// conditions GPUMissing, GPUMismatch, WorkloadsRefused, DiskNotEnforced and
// ScalarsMismatch raised, updated or cleared), the session epoch of the
// report, GPU UUIDs by what happened to them, and its scalars when they
// changed. The node's resync writes it too, when it adopts a shrink of the
// scalars that waited for the bookings to fit: session epoch 0 (no report
// made it), no GPUs, the scalars after it.
type NodeInventoryReconciledEventData struct {
	ID                string          `json:"id"`
	PoolID            string          `json:"poolId"`
	State             State           `json:"state"`
	NoScheduleReasons []string        `json:"noScheduleReasons"`
	Conditions        []NodeCondition `json:"conditions"`
	Version           int64           `json:"version"`
	SessionEpoch      int64           `json:"sessionEpoch"`
	// Missing are recorded GPUs the daemon did not report, now missing.
	Missing []string `json:"missing"`
	// Returned are missing GPUs the daemon reported again, now healthy.
	Returned []string `json:"returned"`
	// Registered are reported GPUs the record lacked, now registered.
	Registered []string `json:"registered"`
	// Mismatched are reported GPUs whose model or memory differs from the
	// record, or that could not be registered.
	Mismatched []string `json:"mismatched"`
	// Scalars are the node's allocatable vCPU, memory and disk after the
	// reconcile, present only when it adopted the daemon's configured
	// values for one of them (omitted otherwise: they did not change).
	Scalars *NodeScalars `json:"scalars,omitempty"`
	// PendingScalars are the node's shrinks of vCPU, memory and disk that
	// wait, after the reconcile, for its bookings to fit them (its
	// ScalarsMismatch condition says why, in words): each absent when
	// none, so {} says that none waits any more (a grow, the recorded
	// value again, a report that states none, or the resync's adoption
	// ended it). Every reconcile writes it; absent only from the events of
	// releases that did not, which say nothing of it.
	PendingScalars *NodePendingScalars `json:"pendingScalars,omitempty"`
}

// NodePendingScalars are the shrinks of a node's allocatable vCPU, memory
// (MB) and disk (GB) that its daemon reported while the node's bookings
// held more: remembered, and booked against, until the bookings fit them
// and the node adopts them. Nil: none for that resource.
type NodePendingScalars struct {
	VCPU     *int64 `json:"vcpu,omitempty"`
	MemoryMB *int64 `json:"memoryMb,omitempty"`
	DiskGB   *int64 `json:"diskGb,omitempty"`
}

// NodeScalars is a node's allocatable vCPU, memory (MB) and disk (GB), as
// registered or as adopted from its daemon's configuration.
type NodeScalars struct {
	VCPU     int64 `json:"vcpu"`
	MemoryMB int64 `json:"memoryMb"`
	DiskGB   int64 `json:"diskGb"`
}
