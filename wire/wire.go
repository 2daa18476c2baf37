// Package wire is the protocol between a node daemon (compute agent) and a
// gateway: JSON messages over one WebSocket per session. It is shared by
// both ends so that they cannot drift apart.
//
// The daemon authenticates the upgrade with its node credential
// (Authorization: Bearer bcn_...), then sends Hello. The gateway answers
// Welcome with the session epoch, and the daemon replays its journal. From
// then on either side may send at any time; the daemon sends Heartbeat at
// least every HeartbeatEvery so that the gateway can report its age.
package wire

import (
	"encoding/json"
	"time"
)

// Path is where a gateway accepts daemon sessions.
const Path = "/daemon/v1/session"

// The body of a gateway's 401 to a daemon whose credential does not
// authenticate (text/plain, one line): RefusedNodeRetired when the
// credential's node has been retired, so that the daemon tells its
// operator to stop it instead of asking for a join token, RefusedCredential
// otherwise (unknown, revoked, or superseded past its grace).
const (
	RefusedCredential  = "authentication failed"
	RefusedNodeRetired = "node retired"
)

// HeartbeatEvery is how often a daemon sends a heartbeat; a gateway closes
// a session it has not heard from for SilenceLimit.
const (
	HeartbeatEvery = 5 * time.Second
	SilenceLimit   = 30 * time.Second
)

// ClockSkewWarn is how far a node's clock may be from the control plane's
// before the daemon and the gateway say so, each in its log, at the
// session's open.
const ClockSkewWarn = time.Second

// MaxMessageBytes is the largest message either end reads. A journal
// replay is the largest message and grows with the journal; command
// output is capped well below it by the daemon (and only outcomes, not
// output, are replayed).
const MaxMessageBytes = 4 << 20

// Message types.
const (
	TypeHello        = "hello"         // daemon → gateway, first message
	TypeWelcome      = "welcome"       // gateway → daemon, the session epoch
	TypeHeartbeat    = "heartbeat"     // daemon → gateway
	TypeReplay       = "replay"        // daemon → gateway, its journal after (re)connecting
	TypeAssign       = "assign"        // gateway → daemon, devices of an allocation
	TypeAssignResult = "assign.result" // daemon → gateway, accepted or refused
	// TypeCommand carries a node command (gateway → daemon), stamped with
	// the session epoch; it may arrive more than once, and the daemon
	// answers a repeat from its journal.
	TypeCommand = "command"
	// TypeCommandResult reports a command's state (running, succeeded,
	// failed) with its exit code and output (daemon → gateway).
	TypeCommandResult = "command.result"
)

// Message is the one envelope of the protocol; fields not used by a type
// are omitted.
type Message struct {
	Type string `json:"type"`

	// Hello.
	JournalID          string `json:"journalId,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
	// Welcome: the node and the session's epoch. Command: the epoch the
	// job was marked sent at; the daemon refuses a command stamped with
	// any epoch but its session's (a zombie gateway's late send).
	NodeID       string `json:"nodeId,omitempty"`
	SessionEpoch int64  `json:"sessionEpoch,omitempty"`
	// Hello: the node's clock when the daemon sent it; the gateway says
	// when it is off from the control plane's by more than ClockSkewWarn.
	// Welcome: the control plane's clock (compute_now()) when the session
	// opened. Assignments' windows are in its time, and the daemon judges
	// them by it rather than by the node's own clock, which may be off.
	// Absent from either end of a release before it was sent.
	Now *time.Time `json:"now,omitempty"`
	// Welcome: the gateway answers every report that has a ReportID with
	// a TypeReportAck once it is recorded. Absent from a gateway of a
	// release before it did: the daemon then forgets a report once it
	// has written it.
	ReportAcks bool `json:"reportAcks,omitempty"`
	// TypeInstanceStopped: the daemon's id of the report, unique among
	// those it keeps; TypeReportAck: the report it answers.
	ReportID string `json:"reportId,omitempty"`
	// Replay.
	Journal []JournalEntry `json:"journal,omitempty"`
	// Assign and AssignResult; on Command, the allocation whose security
	// domain the job runs in (empty for an operator's fleet job).
	AllocationID string   `json:"allocationId,omitempty"`
	DeviceIDs    []string `json:"deviceIds,omitempty"`
	Accepted     bool     `json:"accepted,omitempty"`
	Reason       string   `json:"reason,omitempty"`
	// Command and CommandResult.
	CommandID   string          `json:"commandId,omitempty"`
	CommandKind string          `json:"commandKind,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	State       string          `json:"state,omitempty"`
	ExitCode    *int32          `json:"exitCode,omitempty"`
	Output      string          `json:"output,omitempty"`
}

// JournalEntry is one line of a daemon's journal: what it was assigned and
// what it ran, in order.
type JournalEntry struct {
	Seq          int64     `json:"seq"`
	Kind         string    `json:"kind"` // "assign", "unassign", "command"
	AllocationID string    `json:"allocationId,omitempty"`
	DeviceIDs    []string  `json:"deviceIds,omitempty"`
	CommandID    string    `json:"commandId,omitempty"`
	Outcome      string    `json:"outcome,omitempty"`
	ExitCode     *int32    `json:"exitCode,omitempty"`
	Output       string    `json:"output,omitempty"`
	At           time.Time `json:"at"`
}
