package gateway

import (
	"time"

	"github.com/bettercompute/compute/wire"
)

// checkNodeClock says, in the log and in
// compute_gateway_sessions_clock_skewed_total, when the clock of the node
// whose hello opened a session at the control plane's time openedAt is off
// from it by more than wire.ClockSkewWarn. The daemon judges its windows
// by the control plane's clock (the welcome's now), so a skew breaks
// nothing of the node's own, but it is a node whose time synchronisation
// is broken, which its operator hears of here rather than only in the
// node's log. The hello was sent just before the open: the measure is off
// by the trip and the open's wait, milliseconds. A hello without a clock
// (a daemon of a release before it was sent) says nothing.
func (g *Gateway) checkNodeClock(nodeID string, hello wire.Message, openedAt time.Time) {
	if hello.Now == nil {
		return
	}
	skew := hello.Now.Sub(openedAt)
	if skew <= wire.ClockSkewWarn && skew >= -wire.ClockSkewWarn {
		return
	}
	g.Metrics.ClockSkewed()
	g.warnDaemon(nodeID, "node clock is off from the control plane's: fix its time synchronisation (NTP)",
		"gateway", g.ID, "node", nodeID, "skew", skew.Round(time.Millisecond).String(),
		"node_time", hello.Now.UTC().Format(time.RFC3339Nano), "control_plane_time", openedAt.UTC().Format(time.RFC3339Nano))
}
