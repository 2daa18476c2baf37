package gateway

import (
	"time"

	"golang.org/x/time/rate"
)

// nodeLimits is what one node's daemon may make this gateway do, kept for
// the node across its sessions here: a daemon that reconnects starts with
// what its last session left, not with a fresh allowance. The daemon
// decides how much it sends, and with a stolen credential that is as much
// as it can; each limit makes the rest cost the gateway nothing.
type nodeLimits struct {
	// inventories bounds the inventories reconciled (inventoryBurst, then
	// one every inventoryLimit).
	inventories *rate.Limiter
	// opens bounds the sessions opened (openBurst, then one every
	// openEvery).
	opens *rate.Limiter
	// warnings bounds the lines logged about the daemon's messages
	// (warnDaemon); suppressed counts those left out since the last one.
	warnings   *rate.Limiter
	suppressed int
}

// limits is nodeID's nodeLimits, made on first use: one entry per node
// that ever authenticated here.
func (g *Gateway) limits(nodeID string) *nodeLimits {
	g.mu.Lock()
	defer g.mu.Unlock()
	l := g.nodeLimits[nodeID]
	if l == nil {
		if g.nodeLimits == nil {
			g.nodeLimits = map[string]*nodeLimits{}
		}
		l = &nodeLimits{inventories: rate.NewLimiter(inventoryLimit, inventoryBurst),
			opens:    rate.NewLimiter(openEvery, openBurst),
			warnings: rate.NewLimiter(daemonWarnEvery, daemonWarnBurst)}
		g.nodeLimits[nodeID] = l
	}
	return l
}

// Each session open is a transaction that supersedes the node's session
// (and, when the node was not connected, writes node.connected; its close
// node.disconnected). A daemon opens one when it (re)connects, at most
// every second by its own backoff, so a node gets openBurst opens in a
// row, then one every openEvery: a daemon that reconnects in a loop (a
// bug, or a stolen credential) is answered 429 with Retry-After before the
// upgrade, and cannot make the database write, nor the event log grow, as
// fast as it can dial.
const openBurst = 10

var openEvery = rate.Every(time.Second)

// A message the gateway refuses or ignores is logged, so that an operator
// sees what a daemon sends that is not taken; but a daemon with a stolen
// credential sends thousands a second (a result for a job it does not
// have, a connection while one is opening). warnDaemon lets each node have
// daemonWarnBurst such lines in a row, then one every daemonWarnEvery; the
// next line it logs says how many it left out ("suppressed"). A flood then
// costs the log a line a second, not a line a message.
const daemonWarnBurst = 20

var daemonWarnEvery = rate.Every(time.Second)

// warnDaemon logs a warning about what nodeID's daemon sent, within the
// node's budget.
func (g *Gateway) warnDaemon(nodeID, msg string, args ...any) {
	l := g.limits(nodeID)
	now := g.now()
	g.mu.Lock()
	if !l.warnings.AllowN(now, 1) {
		l.suppressed++
		g.mu.Unlock()
		return
	}
	left := l.suppressed
	l.suppressed = 0
	g.mu.Unlock()
	if left > 0 {
		args = append(args, "suppressed", left)
	}
	g.logger().Warn(msg, args...)
}
