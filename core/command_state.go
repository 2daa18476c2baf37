package core

// Command states: a command sent to a node daemon.
const (
	CommandQueued    State = "queued"
	CommandSent      State = "sent"
	CommandRunning   State = "running"
	CommandSucceeded State = "succeeded"
	CommandFailed    State = "failed"
	CommandCancelled State = "cancelled"
	CommandTimedOut  State = "timed-out"
)

// commandStateTable is the daemon command lifecycle. sent → queued is a
// redelivery after the daemon's session was lost before it acknowledged.
var commandStateTable = StateTable{
	Name: "command",
	States: []State{CommandQueued, CommandSent, CommandRunning, CommandSucceeded,
		CommandFailed, CommandCancelled, CommandTimedOut},
	Terminal: map[State]bool{CommandSucceeded: true, CommandFailed: true,
		CommandCancelled: true, CommandTimedOut: true},
	Next: map[State][]State{
		StateNone:      {CommandQueued},
		CommandQueued:  {CommandSent, CommandCancelled, CommandTimedOut},
		CommandSent:    {CommandQueued, CommandRunning, CommandFailed, CommandCancelled, CommandTimedOut},
		CommandRunning: {CommandSucceeded, CommandFailed, CommandTimedOut},
	},
}

// CommandStateTable returns the daemon command lifecycle table.
func CommandStateTable() StateTable { return commandStateTable }
