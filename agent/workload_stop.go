package agent

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/bettercompute/compute/wire"
)

// How a workload ends: stopped by the daemon (stopGroup), or on its own,
// with an exit status the control plane is told (exitStatus).

// stopGroup stops a workload: SIGTERM to every process in its cgroup, or,
// when the cgroup lists none (no container isolation), to its process
// group (a `runc exec` passes it on to the workload); never both, which
// would deliver it twice to the workload's own process and run its TERM
// handler twice (a checkpoint begun again, its helper processes killed by
// the second signal). Then,
// once it exited or after grace, every process of it killed (proc.kill:
// its cgroup's) and SIGKILL to whatever of the group is left; it returns
// when the process has been reaped. A grace of 0 (a preempted reservation's
// class may ask for it) kills at once, after the SIGTERM; the daemon's own
// grace is never 0 (Config.StopGrace defaults to DefaultStopGrace).
func stopGroup(proc *instanceProcess, grace time.Duration) {
	if !proc.group.signal(syscall.SIGTERM) { // the workload's children too, not only the process runc forwards it to
		signalGroup(proc, syscall.SIGTERM)
	}
	if grace > 0 {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-proc.done:
		case <-t.C:
		}
	}
	if proc.kill != nil {
		proc.kill()
	}
	signalGroup(proc, syscall.SIGKILL)
	<-proc.done
}

// signalGroup signals proc's process group only while proc is still the
// process it started as: once it has exited (done) or its pid belongs to
// another process (a different start time), the pid may be another
// tenant's, and its group is left alone.
func signalGroup(proc *instanceProcess, sig syscall.Signal) {
	select {
	case <-proc.done:
		return
	default:
	}
	if ticks, ok := processStart(proc.pid); !ok || (proc.startTicks != 0 && ticks != proc.startTicks) {
		return
	}
	_ = syscall.Kill(-proc.pid, sig)
}

// exitStatus is a finished workload's exit status (128+n when signal n
// ended it, as a shell says) and the reason of a failure ("" for status
// 0): wire.ReasonOOMKilled when the allocation's OOM killer fired.
func exitStatus(err error, oomKilled bool) (int32, string) {
	var exitErr *exec.ExitError
	code := int32(0)
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		code = int32(exitErr.ExitCode())
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int32(ws.Signal())
		}
	default:
		code = -1
	}
	return code, exitReason(code, oomKilled)
}

// exitReason is the reason of a workload's exit with status code: "" for
// 0, wire.ReasonOOMKilled when it was SIGKILLed and the allocation's OOM
// killer fired, else "exit status N".
func exitReason(code int32, oomKilled bool) string {
	switch {
	case code == 0:
		return ""
	case oomKilled && code == 128+int32(syscall.SIGKILL):
		return wire.ReasonOOMKilled
	default:
		return fmt.Sprintf("exit status %d", code)
	}
}
