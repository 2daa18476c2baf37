package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bettercompute/compute/wire"
)

// The kernel's backstop for an allocation's end. The watchdog stops an
// allocation's container at the end of its window, but only while the
// daemon runs: a daemon SIGSTOPped, hung, or killed and not restarted
// across the end left the workload running past it for as long as the
// daemon was away (measured: a daemon frozen 5 s past the end, 5 s; one
// down for an hour, an hour). So the pod's keeper, the container's first
// process, ends itself at a deadline the daemon writes for it: when the
// first process of a PID namespace ends, the kernel kills every other
// process in it, whatever signals they ignore, and the container's cgroup
// empties. The deadline is the window's end plus the stop grace and
// keeperSlack; the daemon moves it when an assignment is extended and
// whenever it measures the control plane's clock again. While the daemon
// runs it stops the allocation first, at the end and with the workloads'
// grace; the keeper's deadline matters only when it does not.
//
// The deadline is reckoned in the node's boot clock (CLOCK_BOOTTIME),
// never in its wall clock. The wall clock can be stepped while the daemon
// is away (an NTP step, an operator's `date -s`): a deadline in it ended a
// workload before its window's end when the clock stepped forward, and
// after it when the clock stepped back. The boot clock only moves forward,
// with real time, suspend included, and nobody can set it. The keeper
// reads it in its container's /proc/uptime: the container has its own
// /proc but no time namespace, so that is the node's boot clock (measured
// under runc: TestKeeperReadsTheNodesBootClock). The daemon knows how long
// the window has left by the control plane's clock as it measured it
// (windowNow, itself kept on the monotonic clock: clock.go) and writes the
// boot-clock second at which that remainder, the grace and the slack are
// over.

// keeperDir is where the keeper reads its deadline inside the container:
// a read-only bind of the allocation's keeperHostDir.
const keeperDir = "/run/compute-keeper"

// keeperBootDeadline is the file of the keeper's deadline, in keeperDir:
// the whole seconds of the node's boot clock (the integer part of
// /proc/uptime) at which the keeper ends its container, rounded up so
// that it never ends it before, then a space and the node's boot id
// (/proc/sys/kernel/random/boot_id) of the boot whose clock that is;
// empty: no deadline (an operator's domain, an assignment without an
// end). The keeper reads the seconds only: no container outlives a boot.
// The daemon reads the boot id (keeperDeadlinePassed): the boot clock
// starts again at 0, and a deadline written before a reboot must not read
// as passed after it. The one place that says what the file means.
const keeperBootDeadline = "boot-deadline"

// bootIDFile holds the node's boot id, new at every boot.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// keeperWallDeadline is the file the keepers of containers made by earlier
// releases read, in keeperDir: the deadline in Unix seconds, compared with
// `date +%s`. Such a keeper never reads keeperBootDeadline, and must never
// find a boot-clock number here (it would be a Unix time long past: the
// workload would end at once). So the daemon keeps this file moving, in
// Unix seconds, where it exists, that is in the directories of containers
// an earlier daemon started; it never makes it, and those it starts have
// only keeperBootDeadline.
const keeperWallDeadline = "deadline"

// keeperPoll is how often a keeper under keeperSh looks at the clock and
// its deadline: the backstop ends a workload at most this long after its
// deadline. Each look forks a sleep.
const keeperPoll = 5 * time.Second

// keeperBashPoll is keeperPoll under keeperBash, which forks nothing to
// look, so looks more often. It is also how long an orphaned process that
// exited waits there to be reaped: bash 5.2 blocks SIGCHLD while `read -t`
// waits, and reaps between two looks (measured: 100 orphans' zombies held
// 100 of their allocation's pids for 4.1 s at a 5 s poll; dash reaps at
// once).
const keeperBashPoll = time.Second

// keeperSlack is how long after the window's end (and the stop grace the
// watchdog gives the workloads then) the keeper ends the container
// itself: enough for a running daemon always to stop it first, with room
// for the node's clock to drift from the control plane's between two
// measurements.
const keeperSlack = time.Minute

// keeperArgsOf is the command line of the keeper of a container this
// sandbox starts: its program under the node's keeper shell, polling every
// keeperPoll or keeperBashPoll (the sandbox's keeperPoll in tests).
func (s *sandbox) keeperArgsOf() []string {
	sh, poll := s.keeperShell, keeperPoll
	if sh == "" {
		sh = keeperSh
	}
	if sh == keeperBash {
		poll = keeperBashPoll
	}
	if s.keeperPoll > 0 {
		poll = s.keeperPoll
	}
	return keeperArgs(sh, keeperDir, "/proc/uptime", poll)
}

// keeperHostDir is the allocation's directory of its keeper's deadline.
func (s *sandbox) keeperHostDir(domain string) string {
	return filepath.Join(s.domainDir(domain), "keeper")
}

// keeperLeft is how long from now the allocation's keeper is to end its
// container: what is left of the window by the control plane's clock (as
// the daemon reckons it) plus the stop grace and keeperSlack. False: no
// deadline (an operator's domain, an assignment without an end).
func (s *sandbox) keeperLeft(a *wire.AssignPayload) (time.Duration, bool) {
	if a == nil || a.End.IsZero() {
		return 0, false
	}
	windowNow := time.Now()
	if s.windowNow != nil {
		windowNow = s.windowNow()
	}
	return a.End.Sub(windowNow) + s.cfg.StopGrace + keeperSlack, true
}

// bootClock is the node's boot clock now (CLOCK_BOOTTIME, what
// /proc/uptime shows), or the sandbox's stand-in for it in tests.
func (s *sandbox) bootClock() (time.Duration, error) {
	if s.bootNow != nil {
		return s.bootNow(), nil
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, err
	}
	return time.Duration(ts.Nano()), nil
}

// bootDeadlineSeconds is the content of keeperBootDeadline for a deadline
// left from boot-clock time now: whole seconds, rounded up (the keeper
// compares them with the whole seconds of /proc/uptime, so it never ends
// before), and 0 for one already past.
func bootDeadlineSeconds(now, left time.Duration) int64 {
	at := now + left
	if at <= 0 {
		return 0
	}
	return int64((at + time.Second - 1) / time.Second)
}

// writeKeeperDeadline writes the allocation's keeper deadline into its
// directory (made if need be: the container's bind of it must exist
// before the container starts), and into keeperWallDeadline where that
// exists (a container an earlier daemon started). Readable by the keeper,
// which runs as nobody; written by root only.
func (s *sandbox) writeKeeperDeadline(a *wire.AssignPayload, domain string) error {
	s.keeperMu.Lock()
	defer s.keeperMu.Unlock()
	dir := s.keeperHostDir(domain)
	if err := mkdirNoFollow(dir, 0o755, 0); err != nil {
		return err
	}
	left, ok := s.keeperLeft(a)
	boot, wall := "", ""
	if ok {
		now, err := s.bootClock()
		if err != nil {
			return err
		}
		boot = strconv.FormatInt(bootDeadlineSeconds(now, left), 10)
		if id, err := os.ReadFile(bootIDFile); err == nil {
			boot += " " + strings.TrimSpace(string(id))
		}
		wall = strconv.FormatInt(time.Now().Add(left).Unix()+1, 10) // rounded up: never before
	}
	if err := writeFileDurable(filepath.Join(dir, keeperBootDeadline), []byte(boot), 0o644); err != nil {
		return err
	}
	old := filepath.Join(dir, keeperWallDeadline)
	if _, err := os.Lstat(old); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return writeFileDurable(old, []byte(wall), 0o644)
}

// moveKeeperDeadline rewrites the keeper deadline of an allocation that
// has a container here (an extended window, a new measurement of the
// control plane's clock); one without a directory gets it when its
// container starts.
func (s *sandbox) moveKeeperDeadline(a *wire.AssignPayload) error {
	if s.mode != IsolationContainer || a == nil {
		return nil
	}
	if _, err := os.Lstat(s.keeperHostDir(a.AllocationID)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return s.writeKeeperDeadline(a, a.AllocationID)
}
