package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/bettercompute/compute/wire"
)

// Command outcomes as the journal records them and the wire reports them.
const (
	outcomeStarted   = "started"
	outcomeSucceeded = "succeeded"
	outcomeFailed    = "failed"
	stateRunning     = "running"
)

// An exec without a timeout gets defaultExecTimeout; of its output the
// daemon keeps only the last maxOutput bytes (tailBuffer), so that one
// result stays far below wire.MaxMessageBytes and a workload that prints
// without end costs the daemon no memory.
const (
	defaultExecTimeout = time.Minute
	maxOutput          = 16 << 10
)

// runningCommands are the commands this daemon process has started and
// not finished: a repeat of one of them is ignored, its result is coming.
type runningCommands struct {
	mu  sync.Mutex
	ids map[string]bool
	wg  sync.WaitGroup
}

// start marks id running; false if it already was.
func (r *runningCommands) start(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = map[string]bool{}
	}
	if r.ids[id] {
		return false
	}
	r.ids[id] = true
	r.wg.Add(1)
	return true
}

func (r *runningCommands) done(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.ids, id)
	r.wg.Done()
}

// wait returns when every started command has journaled its outcome, so a
// stopped daemon leaves no writer behind on its journal.
func (r *runningCommands) wait() { r.wg.Wait() }

// command carries out a command the gateway sent, at least once made safe:
// the journal, written before acting, tells a repeat from new work. A
// finished command is answered with its recorded result; one this process
// is running is ignored; one started by an earlier process of this daemon
// (it restarted mid-run) is reported failed rather than run twice. New
// work is journaled as started, reported running, and run in the
// background; its result goes to the journal first, then to whichever
// session is open (a lost report is re-asked for at the next session).
//
// Assign and unassign are idempotent, so one started before a restart is
// carried out again rather than failed; an assign is applied before the
// next message is read. Their results carry the observed generation.
//
// life is the daemon's lifetime: a command outlives its session, as a
// workload does when the node is disconnected, but not the daemon (the
// fake runner's processes stop with it and are journaled as failed).
func (d *daemon) command(ctx, life context.Context, ws *websocket.Conn, m wire.Message) error {
	if e, ok := d.journal.commandEntry(m.CommandID); ok {
		switch {
		case e.Outcome != outcomeStarted:
			return send(ctx, ws, d.stamp(m, wire.Message{Type: wire.TypeCommandResult, CommandID: m.CommandID,
				State: e.Outcome, ExitCode: e.ExitCode, Output: e.Output, Reason: e.Reason}))
		case !d.running.start(m.CommandID):
			return nil // running in this process: its result will follow
		case m.CommandKind == wire.CommandKindAssign || m.CommandKind == wire.CommandKindUnassign:
			// Started before a restart: assign and unassign are
			// idempotent, so they are simply carried out again.
			d.running.done(m.CommandID)
		default:
			defer d.running.done(m.CommandID)
			reason := "interrupted: the daemon restarted while it ran"
			if err := d.journal.append(journalRecord{JournalEntry: wire.JournalEntry{Kind: entryCommand,
				CommandID: m.CommandID, Outcome: outcomeFailed, Output: reason}, Reason: reason}); err != nil {
				return err
			}
			return send(ctx, ws, d.stamp(m, wire.Message{Type: wire.TypeCommandResult, CommandID: m.CommandID,
				State: outcomeFailed, Reason: reason}))
		}
	}
	if !d.running.start(m.CommandID) {
		return nil
	}
	if err := d.journal.append(journalRecord{JournalEntry: wire.JournalEntry{Kind: entryCommand, CommandID: m.CommandID,
		Outcome: outcomeStarted}}); err != nil {
		d.running.done(m.CommandID)
		return err
	}
	if err := send(ctx, ws, d.stamp(m, wire.Message{Type: wire.TypeCommandResult, CommandID: m.CommandID,
		State: stateRunning})); err != nil {
		d.log.Warn("command running report", "command", m.CommandID, "err", err)
	}
	run := func() {
		defer d.running.done(m.CommandID)
		res := d.stamp(m, d.execute(life, m))
		if err := d.journal.append(journalRecord{JournalEntry: wire.JournalEntry{Kind: entryCommand, CommandID: m.CommandID,
			Outcome: res.State, ExitCode: res.ExitCode, Output: res.Output}, Reason: res.Reason}); err != nil {
			d.log.Error("journal command result", "command", m.CommandID, "err", err)
			return
		}
		if err := send(ctx, ws, res); err != nil {
			d.log.Warn("command result report", "command", m.CommandID, "err", err)
		}
	}
	if m.CommandKind == wire.CommandKindAssign {
		// An assign is applied before the next message is read, so that a
		// job sent after it (an instance-start of the allocation in the
		// same dispatch) finds it.
		run()
		return nil
	}
	go run()
	return nil
}

// stamp sets, on a result of an assign or unassign, the generation this
// daemon has applied.
func (d *daemon) stamp(m, res wire.Message) wire.Message {
	if m.CommandKind == wire.CommandKindAssign || m.CommandKind == wire.CommandKindUnassign {
		res.ObservedGeneration = d.journal.observedGeneration()
	}
	return res
}

// commandPayload mirrors core.NodeCommandPayload; the agent keeps its own
// copy so that the daemon does not depend on the control plane's core.
type commandPayload struct {
	Script         string `json:"script"`
	Image          string `json:"image"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
	InstanceID     string `json:"instanceId"`
}

// execute runs one node job: assign and unassign change what this node
// holds (see assign.go); exec runs sh -c in the allocation's sandbox (see
// sandbox) under a timeout; instances run there too; wipe and deploy are
// stand-ins that only leave their mark in the journal.
func (d *daemon) execute(ctx context.Context, m wire.Message) wire.Message {
	res := wire.Message{Type: wire.TypeCommandResult, CommandID: m.CommandID, State: outcomeSucceeded}
	switch m.CommandKind {
	case wire.CommandKindAssign:
		return d.assign(res, m)
	case wire.CommandKindUnassign:
		return d.unassign(res, m)
	}
	var p commandPayload
	if len(m.Payload) > 0 {
		if err := json.Unmarshal(m.Payload, &p); err != nil {
			res.State, res.Reason = outcomeFailed, "bad payload: "+err.Error()
			return res
		}
	}
	switch m.CommandKind {
	case "wipe":
		res.Output = "wipe recorded (fake inventory: nothing to erase)"
	case "deploy":
		res.Output = fmt.Sprintf("deploy of %q recorded (fake inventory: nothing to install)", p.Image)
	case "exec":
		return d.exec(ctx, res, m.AllocationID, p)
	case "instance-start":
		return d.instances.start(ctx, d.sandbox, d.journal.assignment, res, m.AllocationID, p)
	case "instance-stop":
		return d.instances.stop(res, p, d.cfg.StopGrace)
	default:
		res.State, res.Reason = outcomeFailed, fmt.Sprintf("unknown command kind %q", m.CommandKind)
	}
	return res
}

// exec runs an exec node job in its allocation's sandbox, under a timeout.
// An allocation's job runs only while it is assigned here (it is stopped
// when it is unassigned); an operator's job without allocation runs in the
// fleet's domain, with no GPU.
func (d *daemon) exec(ctx context.Context, res wire.Message, allocationID string, p commandPayload) wire.Message {
	timeout := defaultExecTimeout
	if p.TimeoutSeconds > 0 {
		timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	ctx, a, done, refusal := d.instances.startExec(ctx, d.journal.assignment, allocationID, res.CommandID)
	if refusal != "" {
		res.State, res.Reason = outcomeFailed, refusal
		return res
	}
	defer done()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	w, err := d.sandbox.workload(ctx, a, p.Script, ".")
	if err != nil {
		res.State, res.Reason = outcomeFailed, err.Error()
		return res
	}
	cmd := w.cmd
	out := &tailBuffer{max: maxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	w.done()
	res.Output = out.String()
	code := int32(0)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		code = -1
		res.State, res.Reason = outcomeFailed, "timed out after "+timeout.String()
	case ctx.Err() != nil:
		code = -1
		res.State, res.Reason = outcomeFailed, "stopped with the daemon"
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			res.Reason = cause.Error()
		}
	case err != nil:
		code, res.Reason = exitStatus(err, w.oomKilled())
		res.State = outcomeFailed
	}
	res.ExitCode = &code
	return res
}
