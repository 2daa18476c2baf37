package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/bettercompute/compute/wire"
)

// DefaultStopGrace is how long a stopped workload's process group has
// between SIGTERM and SIGKILL.
const DefaultStopGrace = 10 * time.Second

// instanceProcesses are the workloads this daemon process runs: instances
// and exec jobs, by allocation. An instance is a real process (sh -c
// <command>, by default a long sleep) in its allocation's sandbox,
// directory instances/<id>: it really starts and really stops, which is
// what the control plane's lifecycle needs to see. Processes stop when the
// daemon stops gracefully; a daemon that is killed leaves them running, and
// its successor adopts them (instance_registry.go).
//
// One lock orders starts against unassigns: a start checks, under it, that
// its allocation is assigned and not being unassigned, and registers its
// process before letting go; an unassign marks the allocation closing
// under it before it collects what to stop. So a workload either starts
// before the unassign looks, and is stopped, or is refused.
type instanceProcesses struct {
	mu    sync.Mutex
	procs map[string]*instanceProcess
	// execs are the running exec jobs, by allocation and command.
	execs map[string]map[string]*execJob
	// closing are the allocations being unassigned.
	closing map[string]bool
	// shuttingDown is set when the daemon's graceful stop begins: no
	// workload starts from then on (refuseStarts).
	shuttingDown bool
	// registry is the record of running instances in the state directory
	// (see instance_registry.go); "" keeps no record.
	registry string
	// exited is told of an instance whose process ended on its own (not
	// stopped by the daemon), with its exit status (nil: not known, see
	// adopted_exit.go) and a reason.
	exited func(proc *instanceProcess, code *int32, reason string)
	// now is the daemon's clock, the judge of assignments' windows.
	now func() time.Time
	// log is told what could not be cleaned up (nil: nothing is).
	log *slog.Logger
}

// instanceProcess is one running instance: started by this daemon process
// (cmd set) or adopted from one before it (cmd nil).
type instanceProcess struct {
	id           string
	allocationID string
	cmd          *exec.Cmd
	pid          int
	startTicks   uint64
	done         chan struct{} // closed when the process exited
	// kill ends the workload itself (not only the process that waits for
	// it), whatever signals it ignores.
	kill func()
	// pidFile and cgroup identify the workload's own process in its
	// container, group the cgroup of every process it started (recorded
	// for a successor daemon).
	pidFile, cgroup string
	group           workloadCgroup
	// exitFile is where its exit status is written when it exits, for a
	// successor daemon that adopts it (adopted_exit.go).
	exitFile string
	// oomBefore is how many processes its allocation's OOM killer had
	// killed when it started.
	oomBefore int64
	// stopping is set (under instanceProcesses.mu) when the daemon stops
	// the instance: its exit is then not the instance's own.
	stopping bool
	// ending is set (under instanceProcesses.mu) when its process has
	// exited on its own and its end is being reported: no stop takes it
	// from then on, and it is still listed as running until the report is
	// made (endReported).
	ending bool
}

type execJob struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// stoppedInstance is an instance the daemon stopped, and why.
type stoppedInstance struct {
	InstanceID   string
	AllocationID string
	PID          int
	Reason       string
}

// start starts the instance's process in its allocation's sandbox; a start
// of an instance already running here is a success (the command was
// redelivered). Its allocation must be assigned here.
func (ip *instanceProcesses) start(life context.Context, sb *sandbox, lookup assignmentLookup, res wire.Message,
	allocationID string, p commandPayload) wire.Message {
	if p.InstanceID == "" {
		res.State, res.Reason = outcomeFailed, "instance-start without instanceId"
		return res
	}
	if !validDomain.MatchString(p.InstanceID) {
		res.State, res.Reason = outcomeFailed, fmt.Sprintf("instance id %q cannot name a directory", p.InstanceID)
		return res
	}
	ip.mu.Lock()
	defer ip.mu.Unlock()
	if ip.procs == nil {
		ip.procs = map[string]*instanceProcess{}
	}
	if cur := ip.procs[p.InstanceID]; cur != nil {
		res.Output = fmt.Sprintf("instance %s already running", p.InstanceID)
		return res
	}
	a, refusal := ip.admit(lookup, allocationID)
	if refusal != "" {
		res.State, res.Reason = outcomeFailed, refusal
		return res
	}
	// Not killed with the daemon's context: a daemon stopped gracefully
	// stops its instances as any stop does (shutdown), SIGTERM and the
	// grace period first.
	w, err := sb.workload(context.WithoutCancel(life), a, p.Script, "instances/"+p.InstanceID)
	if err != nil {
		res.State, res.Reason = outcomeFailed, err.Error()
		return res
	}
	cmd := w.cmd
	if err := cmd.Start(); err != nil {
		res.State, res.Reason = outcomeFailed, "start: "+err.Error()
		return res
	}
	proc := &instanceProcess{id: p.InstanceID, allocationID: allocationID, cmd: cmd, pid: cmd.Process.Pid,
		done: make(chan struct{}), kill: w.kill, pidFile: w.pidFile, cgroup: w.cgroup, group: w.group,
		exitFile: w.exitFile, oomBefore: w.oomBefore}
	proc.startTicks, _ = processStart(proc.pid)
	// runc returns only once the process's output is closed: a process it
	// left in the background may hold it (workload_exit.go).
	returned, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		if killed, err := endWithProcess(w.pidFile, w.group, returned); killed && err != nil && ip.log != nil {
			ip.log.Warn("processes of an ended instance", "instance", p.InstanceID, "err", err)
		}
	}()
	go func() {
		err := cmd.Wait()
		close(returned)
		<-watched
		// An instance ends with its process: what it left running in the
		// background goes with it.
		if err := w.group.remove(); err != nil && ip.log != nil {
			ip.log.Warn("processes of an ended instance", "instance", p.InstanceID, "err", err)
		}
		if !ip.beginEnding(proc, life) {
			w.done()
			close(proc.done)
			return
		}
		close(proc.done)
		code, reason := exitStatus(err, w.oomKilled())
		ip.endReported(proc, func() { ip.exited(proc, &code, reason) })
		// Its exit file goes only now, for a successor if the daemon is
		// killed before the report is sent or kept (adopted_exit.go).
		w.done()
	}()
	ip.procs[p.InstanceID] = proc
	if err := ip.persist(); err != nil {
		// Not fatal to the instance, but a daemon restarted now would not
		// know it: say so in the result.
		res.Output = "warning: instance not recorded: " + err.Error() + "\n"
	}
	// The output reaches the tenant in node.command.succeeded: the host's
	// process id is the operator's, in the daemon's log.
	res.Output += fmt.Sprintf("instance %s started", p.InstanceID)
	if ip.log != nil {
		ip.log.Info("instance started", "instance", p.InstanceID, "allocation", allocationID, "pid", cmd.Process.Pid)
	}
	return res
}

// stop stops the instance's process (see stopGroup). Stopping an instance
// that does not run here succeeds: stop is what the caller wants either
// way.
func (ip *instanceProcesses) stop(res wire.Message, p commandPayload, grace time.Duration) wire.Message {
	ip.mu.Lock()
	proc := ip.procs[p.InstanceID]
	ip.mu.Unlock()
	if proc == nil {
		res.Output = fmt.Sprintf("instance %s is not running here", p.InstanceID)
		return res
	}
	ip.markStopping(proc)
	stopGroup(proc, grace)
	ip.forgetProc(proc)
	res.Output = fmt.Sprintf("instance %s stopped", p.InstanceID)
	if ip.log != nil {
		ip.log.Info("instance stopped", "instance", p.InstanceID, "pid", proc.pid)
	}
	return res
}

// beginEnding decides, once proc's process has exited, whether that was
// the instance's own end, to report: not when the daemon stopped it, or
// is stopping (life over: the shutdown reports its stops), or nobody is
// told of exits. If it was, proc is marked ending.
func (ip *instanceProcesses) beginEnding(proc *instanceProcess, life context.Context) bool {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	if proc.stopping || life.Err() != nil || ip.exited == nil {
		return false
	}
	proc.ending = true
	return true
}

// endReported makes report (the end of ending instance proc: sent on the
// session, or kept for the next one) and only then forgets proc. Until
// then every inventory lists proc: one that no longer listed it, taken
// before the report and sent before it, would make the control plane end
// the instance lost before the report that ends it with its exit status
// arrived. Sent in this order, an inventory taken after the report was
// made comes after it on the session (or, without a session, after the
// reports kept, which the next session sends before its inventory).
func (ip *instanceProcesses) endReported(proc *instanceProcess, report func()) {
	report()
	ip.forgetProc(proc)
}

// forgetProc drops proc from the table if it is still the instance's. An
// adopted one's files go then too (removeFiles): one this daemon started
// has its own removed when its `runc exec` returns (workload.done).
func (ip *instanceProcesses) forgetProc(proc *instanceProcess) {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	if ip.procs[proc.id] != proc {
		return
	}
	delete(ip.procs, proc.id)
	_ = ip.persist() // a stale entry is harmless: adoption checks the process's start time
	if proc.cmd == nil {
		// After the record no longer names them: a successor that
		// found it there without its exit file would report its end
		// without its status.
		proc.removeFiles()
	}
}

// markStopping records that the daemon is stopping proc.
func (ip *instanceProcesses) markStopping(proc *instanceProcess) {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	proc.stopping = true
}

// beginClosing marks an allocation as being unassigned: no workload of it
// starts from now on.
func (ip *instanceProcesses) beginClosing(allocationID string) {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	if ip.closing == nil {
		ip.closing = map[string]bool{}
	}
	ip.closing[allocationID] = true
}

// refuseStarts refuses every workload from now on: the daemon is stopping.
// A start admitted before it is registered by then, and is the shutdown's
// to stop.
func (ip *instanceProcesses) refuseStarts() {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	ip.shuttingDown = true
}

// isClosing reports whether the allocation is being unassigned.
func (ip *instanceProcesses) isClosing(allocationID string) bool {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	return ip.closing[allocationID]
}

func (ip *instanceProcesses) endClosing(allocationID string) {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	delete(ip.closing, allocationID)
}

// stopWhere stops, in parallel, every instance for which why returns a
// reason (and every exec job of an allocation it names, for which it is
// asked with an empty instance id), and returns the stopped instances by
// instance id. Allocations being unassigned are left to their unassign
// unless all is set.
func (ip *instanceProcesses) stopWhere(grace time.Duration, all bool, why func(instanceID, allocationID string) string) []stoppedInstance {
	type victim struct {
		proc   *instanceProcess
		reason string
	}
	var victims []victim
	var jobs []*execJob
	ip.mu.Lock()
	for _, proc := range ip.procs {
		if proc.ending || !all && ip.closing[proc.allocationID] {
			continue // an ending one's end is being reported
		}
		if r := why(proc.id, proc.allocationID); r != "" {
			proc.stopping = true
			victims = append(victims, victim{proc, r})
		}
	}
	for alloc, byCmd := range ip.execs {
		if !all && ip.closing[alloc] {
			continue
		}
		if r := why("", alloc); r != "" {
			for _, j := range byCmd {
				j.cancel(errors.New("stopped: " + r))
				jobs = append(jobs, j)
			}
		}
	}
	ip.mu.Unlock()
	out := make([]stoppedInstance, len(victims))
	var wg sync.WaitGroup
	for i, v := range victims {
		wg.Go(func() {
			stopGroup(v.proc, grace)
			ip.forgetProc(v.proc)
			out[i] = stoppedInstance{InstanceID: v.proc.id, AllocationID: v.proc.allocationID,
				PID: v.proc.pid, Reason: v.reason}
		})
	}
	wg.Wait()
	for _, j := range jobs {
		<-j.done
	}
	slices.SortFunc(out, func(a, b stoppedInstance) int { return cmp.Compare(a.InstanceID, b.InstanceID) })
	return out
}

// running lists the instance processes running now, by instance id.
func (ip *instanceProcesses) running() []wire.RunningInstance {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	out := make([]wire.RunningInstance, 0, len(ip.procs))
	for _, p := range ip.procs {
		out = append(out, wire.RunningInstance{InstanceID: p.id, AllocationID: p.allocationID, PID: p.pid})
	}
	slices.SortFunc(out, func(a, b wire.RunningInstance) int { return cmp.Compare(a.InstanceID, b.InstanceID) })
	return out
}

// startExec admits and registers an exec job of an allocation; the job's
// context ends (with a cause) when its allocation is unassigned or
// expires. done must be called when the job's process has exited.
func (ip *instanceProcesses) startExec(ctx context.Context, lookup assignmentLookup, allocationID, commandID string) (
	context.Context, *wire.AssignPayload, func(), string) {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	a, refusal := ip.admit(lookup, allocationID)
	if refusal != "" {
		return nil, nil, nil, refusal
	}
	ctx, cancel := context.WithCancelCause(ctx)
	job := &execJob{cancel: cancel, done: make(chan struct{})}
	if ip.execs == nil {
		ip.execs = map[string]map[string]*execJob{}
	}
	if ip.execs[allocationID] == nil {
		ip.execs[allocationID] = map[string]*execJob{}
	}
	ip.execs[allocationID][commandID] = job
	done := func() {
		ip.mu.Lock()
		delete(ip.execs[allocationID], commandID)
		if len(ip.execs[allocationID]) == 0 {
			delete(ip.execs, allocationID)
		}
		ip.mu.Unlock()
		cancel(nil)
		close(job.done)
	}
	return ctx, a, done, ""
}
