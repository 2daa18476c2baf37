package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bettercompute/compute/wire"
)

// The report of an instance its container's keeper ended. When the keeper
// exits at its deadline (keeper_deadline.go), the kernel SIGKILLs every
// other process of the container, so the instance's `runc exec` returns
// 128+SIGKILL, its exit file says 137, and the daemon that comes back (or
// wakes up) found an instance that had "exited" with status 137: the
// control plane ended it `failed`, "exit status 137", as if the workload
// had crashed. It was stopped because its window ended, and is reported as
// the watchdog reports its own stop at the end: `stopped`, with the same
// reason (endedReason).

// killedStatus is the exit status of a workload SIGKILLed: 128+9.
const killedStatus = 128 + int32(unix.SIGKILL)

// keeperEnded is the reason to report the end of instance proc with, as a
// stop at its window's end, when its container's keeper ended it, or "".
// That is so when everything points at the keeper: the workload was
// SIGKILLed (or its status is not known) and not by the OOM killer, its
// allocation's keeper deadline, written in this boot, has passed by the
// node's boot clock, and its container has no process left (the keeper
// is gone too). A workload
// SIGKILLed by someone else while no daemon ran, before a deadline that
// then passed, is reported so as well: it would have been stopped at that
// end all the same.
func (d *daemon) keeperEnded(proc *instanceProcess, code *int32, reason string) string {
	if proc.allocationID == "" || reason == wire.ReasonOOMKilled || (code != nil && *code != killedStatus) {
		return ""
	}
	a, ok := d.journal.assignment(proc.allocationID)
	if !ok || a.End.IsZero() || !d.sandbox.keeperDeadlinePassed(proc.allocationID) {
		return ""
	}
	return endedReason(a)
}

// keeperDeadlinePassed says whether the keeper of the allocation's
// container has passed its deadline and is gone, with every process of
// its container. A deadline of an earlier boot (or one without its boot
// id) has not passed: after a reboot the boot clock counts from 0 again,
// and the machine's restart, not the keeper, ended the workload.
func (s *sandbox) keeperDeadlinePassed(domain string) bool {
	if s.mode != IsolationContainer {
		return false
	}
	b, err := os.ReadFile(filepath.Join(s.keeperHostDir(domain), keeperBootDeadline))
	if err != nil {
		return false
	}
	id, err := os.ReadFile(bootIDFile)
	if err != nil {
		return false
	}
	secs, written, ok := strings.Cut(strings.TrimSpace(string(b)), " ")
	if !ok || written != strings.TrimSpace(string(id)) {
		return false
	}
	at, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return false
	}
	now, err := s.bootClock()
	if err != nil || now < time.Duration(at)*time.Second {
		return false
	}
	return !cgroupHasProcesses(s.cfg.CgroupRoot, s.cgroupsPath(domain))
}
