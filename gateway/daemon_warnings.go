package gateway

import (
	"time"

	"golang.org/x/time/rate"
)

// A message the gateway refuses or ignores is logged, so that an operator
// sees what a daemon sends that is not taken; but the daemon decides how
// many it sends, and one with a stolen credential sends thousands a second
// (a result for a job it does not have, a connection while one is opening).
// warnDaemon lets each node have daemonWarnBurst such lines in a row, then
// one every daemonWarnEvery; the next line it logs says how many it left
// out ("suppressed"). A flood then costs the log a line a second, not a
// line a message.
const daemonWarnBurst = 20

var daemonWarnEvery = rate.Every(time.Second)

// warnBudget is one node's share of the gateway's warnings.
type warnBudget struct {
	lines      *rate.Limiter
	suppressed int
}

// warnDaemon logs a warning about what nodeID's daemon sent, within the
// node's budget.
func (g *Gateway) warnDaemon(nodeID, msg string, args ...any) {
	g.mu.Lock()
	b := g.warns[nodeID]
	if b == nil {
		if g.warns == nil {
			g.warns = map[string]*warnBudget{}
		}
		b = &warnBudget{lines: rate.NewLimiter(daemonWarnEvery, daemonWarnBurst)}
		g.warns[nodeID] = b
	}
	if !b.lines.AllowN(g.now(), 1) {
		b.suppressed++
		g.mu.Unlock()
		return
	}
	left := b.suppressed
	b.suppressed = 0
	g.mu.Unlock()
	if left > 0 {
		args = append(args, "suppressed", left)
	}
	g.logger().Warn(msg, args...)
}
