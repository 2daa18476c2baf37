package agent

import (
	"fmt"
	"time"

	"github.com/bettercompute/compute/wire"
)

// Which workloads may start: only an assigned allocation's, not while it
// is being unassigned, and only inside its window by the control plane's
// clock as the daemon reckons it (windowNow);
// none once the daemon is stopping.

// daemonStopping is why a workload is refused once the daemon's graceful
// stop has begun: a stopped daemon leaves nothing running.
const daemonStopping = "the node daemon is stopping"

// assignmentLookup finds the assignment held for an allocation.
type assignmentLookup func(allocationID string) (wire.AssignPayload, bool)

func notAssigned(allocationID string) string {
	return fmt.Sprintf("allocation %s is not assigned to this node", allocationID)
}

// windowSkew is how early a workload may start before its assignment's
// start: the daemon's reckoning of the control plane's clock may be off
// by that much.
const windowSkew = time.Minute

// admit says whether a workload of allocationID may start now, with the
// assignment it runs under (nil for an operator's job without
// allocation). Callers hold ip.mu.
func (ip *instanceProcesses) admit(lookup assignmentLookup, allocationID string) (*wire.AssignPayload, string) {
	if ip.shuttingDown {
		return nil, daemonStopping
	}
	if allocationID == "" {
		return nil, ""
	}
	if ip.closing[allocationID] {
		return nil, fmt.Sprintf("allocation %s is being unassigned from this node", allocationID)
	}
	a, ok := lookup(allocationID)
	if !ok {
		return nil, notAssigned(allocationID)
	}
	now := time.Now()
	if ip.now != nil {
		now = ip.now()
	}
	if why := outsideWindow(a, now); why != "" {
		return nil, why
	}
	return &a, ""
}

// outsideWindow says why now, by the control plane's clock, is outside the
// assignment's window [Start, End), or "".
func outsideWindow(a wire.AssignPayload, now time.Time) string {
	switch {
	case !a.Start.IsZero() && now.Add(windowSkew).Before(a.Start):
		return fmt.Sprintf("allocation %s starts at %s: it is not active yet on this node", a.AllocationID,
			a.Start.UTC().Format(time.RFC3339))
	case !a.End.IsZero() && !now.Before(a.End):
		return endedReason(a)
	}
	return ""
}

// endedReason is the reason a workload stopped at the end of assignment a
// is reported with: by the watchdog, or by the container's keeper while no
// daemon ran (keeper_ended.go).
func endedReason(a wire.AssignPayload) string {
	return fmt.Sprintf("the assignment of allocation %s ended at %s", a.AllocationID, a.End.UTC().Format(time.RFC3339))
}
