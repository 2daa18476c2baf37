// Package eventstreamtest helps tests of SSE streams: a heartbeat timer
// whose time the test moves by hand, so that what a stream sends while
// events flow or while it is idle is asserted without the wall clock.
package eventstreamtest

import (
	"sync"
	"time"

	"github.com/bettercompute/compute/eventstream"
)

// ManualTimer is an eventstream.IdleTimer whose time moves only by
// Advance. It fires once its deadline is reached, and again only after a
// Reset, as a time.Timer.
type ManualTimer struct {
	mu       sync.Mutex
	now      time.Duration
	deadline time.Duration
	armed    bool
	resets   int
	c        chan time.Time
}

// ManualTimers returns a BrokerOptions.IdleTimer and the channel on which
// it hands the test each timer it starts: one per stream, when the stream
// has caught up and its Deliver waits for live events.
func ManualTimers() (func(time.Duration) eventstream.IdleTimer, <-chan *ManualTimer) {
	started := make(chan *ManualTimer, 64)
	return func(d time.Duration) eventstream.IdleTimer {
		m := &ManualTimer{deadline: d, armed: true, c: make(chan time.Time, 1)}
		started <- m
		return m
	}, started
}

// C is the channel the timer fires on.
func (m *ManualTimer) C() <-chan time.Time { return m.c }

// Reset restarts the timer to fire d after its present time, discarding
// an expiry not yet received.
func (m *ManualTimer) Reset(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drain()
	m.deadline, m.armed = m.now+d, true
	m.resets++
}

// Stop disarms the timer.
func (m *ManualTimer) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drain()
	m.armed = false
}

func (m *ManualTimer) drain() {
	select {
	case <-m.c:
	default:
	}
}

// Advance moves the timer's time by d, firing it if its deadline passed.
func (m *ManualTimer) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now += d
	if m.armed && m.now >= m.deadline {
		m.armed = false
		m.c <- time.Time{}
	}
}

// Resets is how many times the stream restarted the timer: after each
// frame it wrote (an event or a heartbeat). A test waits on it to know the
// stream is done with a frame before it moves time on.
func (m *ManualTimer) Resets() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.resets
}
