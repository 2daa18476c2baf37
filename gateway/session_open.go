package gateway

import "github.com/coder/websocket"

// refusedOpening is the close reason of a connection whose hello arrived
// while another connection of the same node was opening its session here.
const refusedOpening = "another session of this node is opening"

// startOpen claims the node's session open at this gateway; it reports
// false when another connection of the node holds the claim, and the
// caller refuses its connection (websocket.StatusTryAgainLater,
// refusedOpening) without touching the database.
//
// One open per node at a time, for two reasons. An open is a transaction
// that holds the gateway's lease row FOR SHARE and then waits for the
// node's row: a daemon that opens many connections at once with its one
// credential (a stolen one, or a bug) would queue as many of them, each on
// a pooled connection, and the lease renewal (an UPDATE of that row) waits
// behind them all; one renewal that times out drops every session here,
// other nodes' included. And the session that the gateway ends up holding
// must be the one the database holds: two opens racing past each other
// could register the older epoch last, leaving the node connected at an
// epoch nobody holds (hold). A daemon opens one session at a time, so this
// refuses only a second connection of the same node, which retries.
func (g *Gateway) startOpen(nodeID string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.opening[nodeID] {
		return false
	}
	if g.opening == nil {
		g.opening = map[string]bool{}
	}
	g.opening[nodeID] = true
	return true
}

// abandonOpen gives up the claim of startOpen for an open that failed.
func (g *Gateway) abandonOpen(nodeID string) {
	g.mu.Lock()
	delete(g.opening, nodeID)
	g.mu.Unlock()
}

// hold makes s the node's session here and gives up the claim of
// startOpen, in one step: a later open of the node, at a higher epoch, can
// only register after it. The session it supersedes here is closed.
func (g *Gateway) hold(s *gatewaySession) {
	g.mu.Lock()
	delete(g.opening, s.nodeID)
	old := g.sessions[s.nodeID]
	if g.sessions == nil {
		g.sessions = map[string]*gatewaySession{}
	}
	g.sessions[s.nodeID] = s
	g.mu.Unlock()
	if old != nil {
		old.close(websocket.StatusPolicyViolation, "session superseded")
	}
}
