package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

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
// empties. The deadline is the window's end plus keeperSlack, in the
// node's own clock (the keeper has no other); the daemon moves it when an
// assignment is extended and whenever it measures the control plane's
// clock again. While the daemon runs it stops the allocation first, at the
// end and with the workloads' grace; the keeper's deadline matters only
// when it does not.

// keeperDir is where the keeper reads its deadline inside the container:
// a read-only bind of the allocation's keeperHostDir.
const keeperDir = "/run/compute-keeper"

// keeperPoll is how often the keeper looks at the clock and its deadline:
// the backstop ends a workload at most this long after its deadline.
const keeperPoll = 5 * time.Second

// keeperSlack is how long after the window's end (and the stop grace the
// watchdog gives the workloads then) the keeper ends the container
// itself: enough for a running daemon always to stop it first, with room
// for the node's clock to drift from the control plane's between two
// measurements.
const keeperSlack = time.Minute

// keeperScript is the keeper's program: it ignores SIGTERM (a stop's TERM
// is for the workloads), reaps what is orphaned into it, and exits once
// the node's clock reaches the deadline in keeperDir/deadline (Unix
// seconds; none or unreadable: no deadline).
var keeperScript = "trap '' TERM; while :; do " +
	"d=$(cat " + keeperDir + "/deadline 2>/dev/null); " +
	`case "$d" in ''|*[!0-9]*) ;; *) [ "$(date +%s)" -lt "$d" ] || exit 0;; esac; ` +
	"sleep " + strconv.Itoa(int(keeperPoll/time.Second)) + " & wait; done"

// keeperHostDir is the allocation's directory of its keeper's deadline.
func (s *sandbox) keeperHostDir(domain string) string {
	return filepath.Join(s.domainDir(domain), "keeper")
}

// keeperDeadline is when, by the node's clock, the allocation's keeper
// ends its container: the window's end (in the control plane's time, as
// the daemon reckons it) plus the stop grace and keeperSlack. Zero: no
// deadline (an operator's domain, an assignment without an end).
func (s *sandbox) keeperDeadline(a *wire.AssignPayload) time.Time {
	if a == nil || a.End.IsZero() {
		return time.Time{}
	}
	now := time.Now()
	windowNow := now
	if s.windowNow != nil {
		windowNow = s.windowNow()
	}
	return now.Add(a.End.Sub(windowNow)).Add(s.cfg.StopGrace + keeperSlack)
}

// writeKeeperDeadline writes the allocation's keeper deadline into its
// directory (made if need be: the container's bind of it must exist
// before the container starts). Readable by the keeper, which runs as
// nobody; written by root only.
func (s *sandbox) writeKeeperDeadline(a *wire.AssignPayload, domain string) error {
	s.keeperMu.Lock()
	defer s.keeperMu.Unlock()
	dir := s.keeperHostDir(domain)
	if err := mkdirNoFollow(dir, 0o755, 0); err != nil {
		return err
	}
	content := ""
	if at := s.keeperDeadline(a); !at.IsZero() {
		content = strconv.FormatInt(at.Unix()+1, 10) // rounded up: never before
	}
	return writeFileDurable(filepath.Join(dir, "deadline"), []byte(content), 0o644)
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
