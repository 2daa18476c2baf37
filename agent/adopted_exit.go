package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// The end of an instance a restarted daemon adopted. Its process exits on
// its own, as any instance's may, and the instance must end then, as one
// the daemon started does (instances.go), with its exit status, not go on
// showing `running` until its allocation ends. The daemon is not the
// parent of the adopted `runc exec` (its killed predecessor was; init
// reaped it), so it cannot wait for its exit status. So every container
// workload's `runc exec` runs under the host's /bin/sh (the one every
// workload already runs in its container, from the host's /bin), which
// writes runc's exit status (the workload's: 128+n for signal n) to the
// workload's exit file, in the allocation's directory that only root can
// write, before it exits with that status itself: whoever adopted the
// instance reads it there once the shell has exited. One that has none (a
// record of an older daemon, a shell killed before it wrote it, a workload
// without container isolation) is reported without a status, and the
// control plane ends the instance `failed`, with adoptedExitUnknown as its
// reason.

// adoptedExitUnknown is the reason an adopted instance's end is reported
// with when its exit status is not known.
const adoptedExitUnknown = "exited after its node daemon restarted; its exit status is not known"

// exitRecorder is the shell script recordExit runs: $1 the exit file, the
// rest the command. A file it cannot write (the allocation's directory
// removed meanwhile) is no error of the workload's, and says nothing in its
// output. The file and its directory are synced (coreutils' sync with
// operands fsyncs just those): the status is read by a daemon that may
// start only after the machine lost its power, and the daemon's own
// reports are kept durably for the same reason (durable_file.go).
const exitRecorder = `f=$1; shift; "$@"; s=$?; { echo "$s" >"$f" && sync "$f" "${f%/*}"; } 2>/dev/null; exit "$s"`

// recordExit makes cmd, not started yet, write its exit status to file
// when it exits, through the host's /bin/sh.
func recordExit(cmd *exec.Cmd, file string) {
	cmd.Args = append([]string{"sh", "-c", exitRecorder, "sh", file, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = "/bin/sh"
}

// recordedExit is the exit status in file, and false when there is none.
func recordedExit(file string) (int32, bool) {
	if file == "" {
		return 0, false
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	code, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 32)
	if err != nil || code < 0 || code > 255 {
		return 0, false
	}
	return int32(code), true
}

// endAdopted waits for the adopted instance proc to end (watchAdopted),
// and unless the daemon stopped it, forgets it and reports its end, with
// its exit status when its exit file holds it (OOMKilled as for any
// instance: SIGKILLed after its allocation's OOM killer fired).
func (ip *instanceProcesses) endAdopted(proc *instanceProcess) {
	<-proc.done
	ip.mu.Lock()
	stopped := proc.stopping
	proc.ending = !stopped
	ip.mu.Unlock()
	if stopped {
		return // the stop reports it
	}
	ip.endReported(proc, func() { ip.reportAdoptedEnd(proc) })
}

// endedAway reports the end of an instance whose process exited while no
// daemon ran (the predecessor was killed, the successor not started yet),
// found gone at adoption: as an adopted instance's end, with the exit
// status its shell wrote (a tenant's job that ended during a daemon
// upgrade ends `succeeded` or `failed` with its status, not `lost`), once
// what it left running in its cgroup is gone. No session is open yet: the
// report waits for the first (session.go), which sends it before its
// inventory, so the control plane never takes the instance for lost. It
// stays in the record, its exit file kept, until the report is kept: a
// daemon killed meanwhile leaves it to its successor to report.
func (ip *instanceProcesses) endedAway(proc *instanceProcess) {
	if err := proc.group.remove(); err != nil && ip.log != nil {
		ip.log.Warn("remove the cgroup of an instance that ended while no daemon ran", "instance", proc.id, "err", err)
	}
	ip.endReported(proc, func() { ip.reportAdoptedEnd(proc) })
}

// removeFiles removes what adopted instance proc's predecessor made to
// start it in its allocation's directory (containerWorkload): its process
// spec, pid file and exit file, process-*.json, .pid and .exit. Nothing
// reads them once proc is forgotten; left there they would stay until the
// allocation is unassigned, possibly its reservation's end, hours later,
// one set per instance. A record of an older daemon names no exit file:
// the others are found from its pid file.
func (proc *instanceProcess) removeFiles() {
	base, ok := strings.CutSuffix(proc.pidFile, ".pid")
	if !ok || !strings.HasPrefix(filepath.Base(base), "process-") {
		return // not a container workload's (or a record this daemon did not write)
	}
	for _, f := range []string{base + ".json", proc.pidFile, base + ".exit"} {
		_ = os.Remove(f)
	}
}

// reportAdoptedEnd reports the end of adopted instance proc, whose process
// has exited, with the exit status its exit file holds.
func (ip *instanceProcesses) reportAdoptedEnd(proc *instanceProcess) {
	code, known := recordedExit(proc.exitFile)
	if ip.exited == nil {
		return
	}
	if !known {
		ip.exited(proc, nil, adoptedExitUnknown)
		return
	}
	ip.exited(proc, &code, exitReason(code, oomKills(proc.group.root, proc.cgroup) > proc.oomBefore))
}
