package eventstream

import "time"

// IdleTimer is the timer of a stream's heartbeat. Deliver restarts it
// after every frame it writes, so that a heartbeat follows only a stretch
// of silence: the stream used to send one every interval even while
// events flowed, a frame that a busy client never needed.
//
// Production uses a time.Timer (BrokerOptions.IdleTimer nil); tests supply
// one whose time they move by hand, so that "no heartbeat while events
// flow" is asserted without reading the wall clock.
type IdleTimer interface {
	// C fires once when the timer expires.
	C() <-chan time.Time
	// Reset restarts the timer to fire after d, discarding an expiry
	// not yet received.
	Reset(d time.Duration)
	// Stop stops the timer for good.
	Stop()
}

// realIdleTimer is an IdleTimer on the process clock. Since Go 1.23,
// Reset and Stop leave no stale expiry in the channel.
type realIdleTimer struct{ t *time.Timer }

func newRealIdleTimer(d time.Duration) IdleTimer { return realIdleTimer{time.NewTimer(d)} }

func (r realIdleTimer) C() <-chan time.Time   { return r.t.C }
func (r realIdleTimer) Reset(d time.Duration) { r.t.Reset(d) }
func (r realIdleTimer) Stop()                 { r.t.Stop() }
