package gateway

import (
	"context"

	"golang.org/x/time/rate"

	"github.com/bettercompute/compute/wire"
)

// SetBeforeWrite makes fn run before every write g makes to a daemon; an
// error from fn fails the write before anything is written. Tests use it
// to make a daemon slow or a send fail.
func SetBeforeWrite(g *Gateway, fn func(ctx context.Context, nodeID string, m wire.Message) error) {
	g.beforeWrite = fn
}

// InventoryDeadline is how long a session may go without its daemon's
// report of what it holds.
const InventoryDeadline = inventoryDeadline

// SetAfterOpen makes fn run when a session's open has committed, before g
// holds the session.
func SetAfterOpen(g *Gateway, fn func(nodeID string, epoch int64)) {
	g.afterOpen = fn
}

// SetReadLimit makes every session of g read its messages within lim (one
// limiter for all: a test has one session), and throttled run when a read
// waits for it.
func SetReadLimit(g *Gateway, lim *rate.Limiter, throttled func(nodeID string)) {
	g.readLimit, g.readsThrottled = lim, throttled
}
