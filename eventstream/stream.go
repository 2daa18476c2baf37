package eventstream

import (
	"context"
	"sync"
	"time"

	"github.com/bettercompute/compute/outbox"
)

// Stream is one client's view of the log: the history after its cursor,
// read from the database, then the broker's live feed.
//
// Joining the two without gap or repeat: the stream is registered with the
// broker before any history is read, at the broker's head H (liveFrom).
// Every event after H reaches the live buffer; history is read from the
// database only up to H, which is already visible there because the broker
// read it. Each event is sent only if its position is after the last one
// sent, which also covers a cursor that is ahead of H.
type Stream struct {
	b        *Broker
	scope    Scope
	gone     chan struct{} // closed by the broker when it drops the stream
	reason   error         // why gone was closed; read after <-gone
	liveFrom outbox.Position

	last     outbox.Position // position of the last event sent
	caughtUp bool            // history up to liveFrom has been sent
	pending  []outbox.Stored // history read but not sent yet

	// The live buffer: the broker appends (never blocking), Deliver takes
	// the whole queue at once. A slice that grows only while events wait,
	// rather than a channel allocated at its full capacity, keeps an idle
	// stream at a few hundred bytes: with a 256-event channel, 10,000 idle
	// SSE clients held 330 MB of empty buffers.
	mu    sync.Mutex
	queue []outbox.Stored
	ready chan struct{} // capacity 1: queue went from empty to not empty
}

// offer queues e for the stream. It reports false, queueing nothing, when
// buffer events are already waiting: the stream fell behind.
func (s *Stream) offer(e outbox.Stored, buffer int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) >= buffer {
		return false
	}
	s.queue = append(s.queue, e)
	if len(s.queue) == 1 {
		select {
		case s.ready <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
	return true
}

// take returns and clears the queued live events.
func (s *Stream) take() []outbox.Stored {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q
}

// Start is the position the stream resumes after: the client's cursor, or
// the live position for a stream without one. Sending it as the first SSE
// id gives a client a resume point even before any event arrives.
func (s *Stream) Start() outbox.Position { return s.last }

// Close unsubscribes the stream; the broker forgets it. Idempotent.
func (s *Stream) Close() { s.b.unsubscribe(s) }

// prefetch reads the first history page, so an expired cursor is reported
// by Subscribe, before the response starts.
func (s *Stream) prefetch(ctx context.Context) error {
	if !s.last.Less(s.liveFrom) {
		s.caughtUp = true
		return s.b.src.CheckCursor(ctx, s.last)
	}
	page, err := s.b.src.Page(ctx, s.scope, s.last, s.b.opts.CatchUpPage)
	if err != nil {
		return err
	}
	s.pending = page.Events
	return nil
}

// Deliver sends the stream's events to send, in log order, until ctx ends
// (the client went away), the broker drops the stream (ErrDropped,
// ErrBrokerClosed), a history read fails (CURSOR_EXPIRED if the log was
// pruned meanwhile) or send fails. When idleEvery passes with nothing sent
// it calls idle (the SSE heartbeat) with the position a reconnect may
// resume after now (see caughtUpTo); every event sent, and every idle
// call, starts that wait again, so a stream whose events keep coming gets
// no heartbeat. idleEvery <= 0 disables that. Deliver is called once, from
// the goroutine that writes to the client.
func (s *Stream) Deliver(ctx context.Context, send func(outbox.Stored) error, idleEvery time.Duration, idle func(resume outbox.Position) error) error {
	if err := s.catchUp(ctx, send); err != nil {
		return err
	}
	var tick <-chan time.Time
	restart := func() {}
	if idleEvery > 0 {
		t := s.b.opts.IdleTimer(idleEvery)
		defer t.Stop()
		tick = t.C()
		restart = func() { t.Reset(idleEvery) }
	}
	for {
		if err := s.dropped(); err != nil {
			return err
		}
		select {
		case <-s.ready:
			before := s.last
			for _, e := range s.take() {
				if err := s.sendUnlessDropped(e, send); err != nil {
					return err
				}
			}
			if s.last != before { // a frame was written
				restart()
			}
		case <-tick:
			if err := idle(s.caughtUpTo()); err != nil {
				return err
			}
			restart()
		case <-s.gone:
			return s.reason
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// catchUp sends history from the database up to liveFrom, page by page.
func (s *Stream) catchUp(ctx context.Context, send func(outbox.Stored) error) error {
	for !s.caughtUp {
		for _, e := range s.pending {
			if s.liveFrom.Less(e.Position) {
				s.caughtUp = true // the rest arrives live
				break
			}
			if err := s.sendUnlessDropped(e, send); err != nil {
				return err
			}
		}
		full := len(s.pending) == s.b.opts.CatchUpPage
		s.pending = nil
		// A short page means nothing more is visible in scope, and all
		// of history up to liveFrom is visible.
		if s.caughtUp || !full || !s.last.Less(s.liveFrom) {
			s.caughtUp = true
			break
		}
		page, err := s.b.src.Page(ctx, s.scope, s.last, s.b.opts.CatchUpPage)
		if err != nil {
			return err
		}
		s.pending = page.Events
	}
	return nil
}

// caughtUpTo moves the stream's resume point up to the broker's head when
// everything in scope up to it has been sent, and returns the resume
// point.
//
// Retention always keeps the newest event of the log, not of the stream's
// scope. A stream whose tenant (or types filter) stays quiet while others'
// events flow would otherwise keep its own last event as the client's
// last event id, and once that is pruned, a reconnect would get
// CURSOR_EXPIRED although the stream missed nothing. Deliver calls it
// between sends, so every event taken from the queue has been sent; with
// the queue empty and the stream still registered, every event in scope up
// to the head was offered (Poll advances the head under the lock of its
// fan-out) and so sent.
func (s *Stream) caughtUpTo() outbox.Position {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if _, live := s.b.streams[s]; !live || !s.last.Less(s.b.head) {
		return s.last
	}
	s.mu.Lock()
	idle := len(s.queue) == 0
	s.mu.Unlock()
	if idle {
		s.last = s.b.head
	}
	return s.last
}

// dropped returns why the broker dropped the stream, or nil. A dropped
// stream stops at once even with events still queued: it is behind anyway,
// and the client resumes from what it got.
func (s *Stream) dropped() error {
	select {
	case <-s.gone:
		return s.reason
	default:
		return nil
	}
}

// sendUnlessDropped sends e unless the stream was dropped meanwhile.
func (s *Stream) sendUnlessDropped(e outbox.Stored, send func(outbox.Stored) error) error {
	if err := s.dropped(); err != nil {
		return err
	}
	return s.sendAfterLast(e, send)
}

func (s *Stream) sendAfterLast(e outbox.Stored, send func(outbox.Stored) error) error {
	if !s.last.Less(e.Position) {
		return nil // already sent from history, or before the cursor
	}
	if err := send(e); err != nil {
		return err
	}
	s.last = e.Position
	return nil
}
