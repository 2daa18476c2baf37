package core

import "time"

// Event types of commands to node daemons (commands.run). Each is one
// transition of a command's state (the command state table) and carries
// the command's new "version". They go to the command's tenant, so a tenant
// follows its own commands' output on the event stream.
const (
	// EventNodeCommandQueued: a command was accepted and waits for dispatch
	// (a session, and min_generation <= the daemon's observed generation).
	EventNodeCommandQueued = "node_command.queued"
	// EventNodeCommandSent: dispatched at a session epoch to a daemon
	// journal. Re-sends of an in-flight command write no event.
	EventNodeCommandSent = "node_command.sent"
	// EventNodeCommandRunning: the daemon journaled the command and started
	// it.
	EventNodeCommandRunning = "node_command.running"
	// EventNodeCommandSucceeded: the daemon reported exit code 0 (or a
	// successful wipe or deploy), with its output.
	EventNodeCommandSucceeded = "node_command.succeeded"
	// EventNodeCommandFailed: the daemon reported a failure, or the daemon
	// came back with a new journal while a command that is not retry-safe
	// was in flight ("daemon lost its memory").
	EventNodeCommandFailed = "node_command.failed"
	// EventNodeCommandCancelled: dispatch dropped a queued instance-start
	// whose instance had stopped before the start could be sent (its
	// reservation ended, or the instance was deleted, while the start
	// waited for its assign): the daemon never gets it.
	EventNodeCommandCancelled = "node_command.cancelled"
	// EventNodeCommandTimedOut: the liveness sweep ended a job that its
	// node can no longer answer: the node has been unreachable (or lost)
	// for longer than commands.NodeJobTimeout, or was retired. A report
	// that comes after it changes nothing.
	EventNodeCommandTimedOut = "node_command.timed_out"
)

// Kinds of node commands. exec runs a shell command on the node and is
// retry-safe only when the caller says so; wipe and deploy change the
// machine and are never replayed into a daemon that lost its journal.
const (
	NodeCommandExec   = "exec"
	NodeCommandWipe   = "wipe"
	NodeCommandDeploy = "deploy"
)

// Node job kinds that carry a node's assignments: an allocation reaches
// its node's daemon as an assign (its devices, scalars and window) and
// leaves it as an unassign. Only the capacity commands and the assignment
// reconcilers write them; commands.run refuses them. Both are retry-safe:
// the daemon carries out a repeat as a no-op.
const (
	NodeCommandAssign   = "assign"
	NodeCommandUnassign = "unassign"
)

// Event types of assign and unassign node jobs: the same transitions and
// data as node_command.*, but fleet-wide (operators only). They are the
// control plane's plumbing, not the tenant's commands: the tenant follows
// its reservation.* and instance.* events, and its webhooks are not sent
// four more events per assignment and four per unassignment.
const (
	EventNodeAssignmentQueued    = "node_assignment.queued"
	EventNodeAssignmentSent      = "node_assignment.sent"
	EventNodeAssignmentRunning   = "node_assignment.running"
	EventNodeAssignmentSucceeded = "node_assignment.succeeded"
	EventNodeAssignmentFailed    = "node_assignment.failed"
)

// IsAssignmentJob reports whether a node job kind carries assignments.
func IsAssignmentJob(kind string) bool {
	return kind == NodeCommandAssign || kind == NodeCommandUnassign
}

// NodeJobEvent is the event type of a node job of kind entering state
// (queued, sent, running, succeeded, failed; cancelled and timed-out for a
// job that is not an assignment), and the tenant it goes to:
// the job's for node_command.*, none (fleet-wide) for node_assignment.*.
// "" for a state without an event.
func NodeJobEvent(kind string, to State, tenant string) (typ, eventTenant string) {
	cmd := map[State]string{CommandQueued: EventNodeCommandQueued, CommandSent: EventNodeCommandSent,
		CommandRunning: EventNodeCommandRunning, CommandSucceeded: EventNodeCommandSucceeded,
		CommandFailed: EventNodeCommandFailed, CommandCancelled: EventNodeCommandCancelled,
		CommandTimedOut: EventNodeCommandTimedOut}
	if !IsAssignmentJob(kind) {
		return cmd[to], tenant
	}
	asg := map[State]string{CommandQueued: EventNodeAssignmentQueued, CommandSent: EventNodeAssignmentSent,
		CommandRunning: EventNodeAssignmentRunning, CommandSucceeded: EventNodeAssignmentSucceeded,
		CommandFailed: EventNodeAssignmentFailed}
	return asg[to], ""
}

// NodeCommandSubject names a node command as an event subject.
func NodeCommandSubject(id string) string { return "node-commands/" + id }

// NodeCommandPayload is what a command carries to the daemon. Script is
// the exec command line (run with sh -c); Image is what a deploy installs.
type NodeCommandPayload struct {
	Script         string `json:"script,omitempty"`
	Image          string `json:"image,omitempty"`
	TimeoutSeconds int    `json:"timeoutSeconds,omitempty"`
}

// NodeCommand is a command to a node daemon as the API shows it.
type NodeCommand struct {
	ID             string             `json:"id"`
	Tenant         string             `json:"tenant"`
	NodeID         string             `json:"nodeId"`
	AllocationID   string             `json:"allocationId,omitempty"`
	IdempotencyKey string             `json:"idempotencyKey"`
	Kind           string             `json:"kind"`
	RetrySafe      bool               `json:"retrySafe"`
	Payload        NodeCommandPayload `json:"payload"`
	MinGeneration  int64              `json:"minGeneration"`
	State          State              `json:"state"`
	ExitCode       *int32             `json:"exitCode,omitempty"`
	Output         string             `json:"output,omitempty"`
	Reason         string             `json:"reason,omitempty"`
	Version        int64              `json:"version"`
	CreatedAt      time.Time          `json:"createdAt"`
	FinishedAt     *time.Time         `json:"finishedAt,omitempty"`
}

// NodeCommandSentEventData is the data of node_command.sent and
// node_assignment.sent, written when a node job is sent to a daemon: the
// job after the transition and the session it was sent at. The catalog
// names NodeCommand for them, the part every node job event shares;
// docs/openapi.yaml documents the two added fields as optional properties
// of the shared schema.
type NodeCommandSentEventData struct {
	NodeCommand
	// SessionEpoch is the epoch of the session the job was sent at.
	SessionEpoch int64 `json:"sessionEpoch"`
	// JournalID is the journal of the daemon it was sent to.
	JournalID string `json:"journalId"`
}
