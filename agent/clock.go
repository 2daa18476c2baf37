package agent

import (
	"sync"
	"time"

	"github.com/bettercompute/compute/wire"
)

// The windows an assignment carries (wire.AssignPayload's Start and End)
// are in the control plane's time (compute_now()), and the daemon judges
// them — which workloads may start, which the watchdog stops — by the
// control plane's clock as it last measured it, not by the node's own: a
// node whose clock is ten minutes ahead used to stop every workload ten
// minutes before its reservation ended, and one ten minutes behind refused
// to start any for the first nine minutes of a reservation.
//
// The gateway's welcome carries the control plane's time at the session's
// open (wire.Message.Now). The daemon anchors it to its own clock at the
// moment it reads the welcome, and from then on the control plane's time is
// that anchor plus the time elapsed on the daemon's clock. With the
// real clock the elapsed time is measured on the monotonic clock, so a step
// of the node's wall clock (NTP correcting it, an operator setting it)
// changes nothing until the next session open measures again. Until a
// first welcome (a daemon restarted while the control plane is
// unreachable) the node's own clock judges.

// controlPlaneClock is the daemon's reading of the control plane's clock.
type controlPlaneClock struct {
	mu sync.Mutex
	// controlPlane is the control plane's time at the last session open,
	// local the daemon's own clock when it learned it; zero before any.
	controlPlane, local time.Time
}

// windowNow is the control plane's time as the daemon reckons it: the
// judge of assignments' windows.
func (d *daemon) windowNow() time.Time {
	local := d.now()
	d.cpClock.mu.Lock()
	defer d.cpClock.mu.Unlock()
	if d.cpClock.local.IsZero() {
		return local
	}
	return d.cpClock.controlPlane.Add(local.Sub(d.cpClock.local))
}

// adoptControlPlaneTime anchors the daemon's windows to the control
// plane's time cp, read now, and says in the log when the node's clock is
// off from it by more than wire.ClockSkewWarn. It returns the node's skew:
// positive when its clock is ahead of the control plane's.
func (d *daemon) adoptControlPlaneTime(cp time.Time) time.Duration {
	local := d.now()
	d.cpClock.mu.Lock()
	d.cpClock.controlPlane, d.cpClock.local = cp, local
	d.cpClock.mu.Unlock()
	skew := local.Sub(cp)
	if skew > wire.ClockSkewWarn || skew < -wire.ClockSkewWarn {
		d.log.Warn("this node's clock is off from the control plane's: assignments' windows are judged by the "+
			"control plane's; fix the node's time synchronisation (NTP)", "skew", skew.Round(time.Millisecond).String(),
			"node_time", local.UTC().Format(time.RFC3339Nano), "control_plane_time", cp.UTC().Format(time.RFC3339Nano))
	}
	return skew
}
