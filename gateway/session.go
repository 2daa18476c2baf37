package gateway

import (
	"sync"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"
)

// gatewaySession is one daemon connection at one epoch.
type gatewaySession struct {
	nodeID string
	epoch  int64
	ws     *websocket.Conn

	// dispatching is held from a dispatch's commit until its last send, so
	// that the session's jobs leave in the order they were marked.
	dispatching sync.Mutex

	mu        sync.Mutex
	lastHeard time.Time
	// opened is when the session was welcomed, and reported whether its
	// daemon has sent the inventory of what it holds since: a session
	// without one by inventoryDeadline is ended (Flush).
	opened   time.Time
	reported bool

	// dropped says an inventory of the session was dropped already, over
	// its node's limit (logged once a session).
	dropped bool
	// reads bounds how fast the session's messages are read (awaitRead).
	reads *rate.Limiter
}

// close closes the connection in the background. A close handshake with a
// daemon that does not read can take seconds (coder/websocket waits up to
// 5 s to write the close frame and 5 s for the answer), and the loops that
// drop sessions (lease renewal, liveness flush) must not wait for it.
func (s *gatewaySession) close(code websocket.StatusCode, why string) {
	go func() { _ = s.ws.Close(code, why) }()
}

func (s *gatewaySession) heard() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastHeard
}

func (s *gatewaySession) hasReported() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reported
}

func (s *gatewaySession) markReported() {
	s.mu.Lock()
	s.reported = true
	s.mu.Unlock()
}

func (s *gatewaySession) touch(t time.Time) {
	s.mu.Lock()
	s.lastHeard = t
	s.mu.Unlock()
}
