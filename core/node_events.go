package core

// Event types of node liveness, node lifecycle commands and node sessions.
// They live apart from event_types.go so the node side can grow on its own.
// Like every aggregate event, a transition of a node's state carries the
// node's new "version" in its data (the invariant checker counts on it).
const (
	// EventNodeConnected: a daemon opened a session and the node was not
	// connected (registered, disconnected, unreachable or lost before).
	EventNodeConnected = "node.connected"
	// EventNodeDisconnected: the session closed or its gateway's lease
	// expired. Nothing is released.
	EventNodeDisconnected = "node.disconnected"
	// EventNodeUnreachable: 40 s without a session plus grace. The node
	// leaves placement (NoScheduleUnreachable) and NodeUnreachable is raised;
	// nothing is released.
	EventNodeUnreachable = "node.unreachable"
	// EventNodeLost: unreachable for longer than the pool's lostAfter, in a
	// provider or vps-host pool. Never for bare metal.
	EventNodeLost = "node.lost"
	// EventNodeDraining: an operator drained the node: no new bookings,
	// existing reservations keep running.
	EventNodeDraining = "node.draining"
	// EventNodeUndrained: an operator let new bookings back on the node.
	EventNodeUndrained = "node.undrained"
	// EventNodeRetired: an operator retired the node: its credentials are
	// revoked and it never takes a booking again.
	EventNodeRetired = "node.retired"
	// EventNodeJoined: a node credential was issued (the node joined, or
	// re-joined). Carries no version: it does not change the node row.
	EventNodeJoined = "node.joined"
)

// Node states (nodes.state). registered is joined but never connected.
const (
	NodeRegistered   State = "registered"
	NodeConnected    State = "connected"
	NodeDisconnected State = "disconnected"
	NodeUnreachable  State = "unreachable"
	NodeLost         State = "lost"
	NodeRetired      State = "retired"
)

// No-schedule reasons the system sets on nodes.no_schedule_reasons; any
// reason keeps the node out of placement.
const (
	NoScheduleUnreachable = "unreachable"
	NoScheduleDraining    = "draining"
)

// ConditionNodeUnreachable is raised on a node that has been without a
// session for longer than the liveness threshold plus grace.
const ConditionNodeUnreachable = "NodeUnreachable"

// nodeLivenessTable is the liveness lifecycle of a node. Any state but
// retired may reconnect; lost is entered only from unreachable; retired is
// terminal and only an operator enters it.
var nodeLivenessTable = StateTable{
	Name:     "node",
	States:   []State{NodeRegistered, NodeConnected, NodeDisconnected, NodeUnreachable, NodeLost, NodeRetired},
	Terminal: map[State]bool{NodeRetired: true},
	Next: map[State][]State{
		StateNone:        {NodeRegistered},
		NodeRegistered:   {NodeConnected, NodeUnreachable, NodeRetired},
		NodeConnected:    {NodeDisconnected, NodeRetired},
		NodeDisconnected: {NodeConnected, NodeUnreachable, NodeRetired},
		NodeUnreachable:  {NodeConnected, NodeLost, NodeRetired},
		NodeLost:         {NodeConnected, NodeRetired},
	},
}

// NodeLivenessTable returns the node liveness lifecycle table.
func NodeLivenessTable() StateTable { return nodeLivenessTable }
