package gateway

import (
	"context"
	"time"

	"golang.org/x/time/rate"
)

// A daemon sends a heartbeat every 5 s, an inventory when it connects or
// its machine changes, and a report or two per node job and per instance
// that ends: a few messages a minute, a few hundred at once at most. A
// daemon that sends as fast as it can (a bug, or a stolen credential: one
// connection sent 200,000 heartbeats a second) costs the gateway a CPU
// core to decode them, taken from the API and the other sessions. So a
// session's messages are read at messageBurst in a row, then messageRate a
// second: past that the gateway waits before it reads the next one, and
// the daemon's writes wait on TCP's flow control, not on the gateway's
// CPU. Nothing is dropped.
const messageBurst = 1000

var messageRate = rate.Limit(200)

// awaitRead waits, before the session's next read, until its messages are
// within the bound; it fails only when ctx ends.
func (g *Gateway) awaitRead(ctx context.Context, s *gatewaySession) error {
	r := s.reads.Reserve()
	wait := r.Delay()
	if wait == 0 {
		return nil
	}
	if g.readsThrottled != nil {
		g.readsThrottled(s.nodeID)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		r.Cancel()
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
