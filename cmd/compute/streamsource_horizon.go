package main

import (
	"context"
	"sync"

	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/outbox"
)

// horizonSource refuses, as the primary's outbox does, a stream cursor
// ahead of the log (another installation's, or kept from before a
// restore: CURSOR_EXPIRED), for a source that cannot tell it from a
// cursor it has not reached yet: a hot standby (its next transaction id
// lags the primary's) and JetStream (behind the outbox by the sink's
// lag). Accepting it would skip, without a word, every event the log
// numbers below it. Only a cursor past the newest position the source
// has handed out is checked on the primary, so a client that resumes
// from what it was sent (the usual reconnect) costs the primary nothing.
type horizonSource struct {
	eventstream.Source
	primary *eventstream.Reader

	mu   sync.Mutex
	mark outbox.Position // the newest position handed out by Head or ReadAfter
}

func (s *horizonSource) raise(p outbox.Position) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mark.Less(p) {
		s.mark = p
	}
}

func (s *horizonSource) Head(ctx context.Context) (outbox.Position, error) {
	h, err := s.Source.Head(ctx)
	if err == nil {
		s.raise(h)
	}
	return h, err
}

func (s *horizonSource) ReadAfter(ctx context.Context, after outbox.Position, limit int) ([]outbox.Stored, error) {
	evs, err := s.Source.ReadAfter(ctx, after, limit)
	if err == nil && len(evs) > 0 {
		s.raise(evs[len(evs)-1].Position)
	}
	return evs, err
}

func (s *horizonSource) CheckCursor(ctx context.Context, after outbox.Position) error {
	if err := s.Source.CheckCursor(ctx, after); err != nil {
		return err
	}
	s.mu.Lock()
	ahead := s.mark.Less(after)
	s.mu.Unlock()
	if !ahead {
		return nil
	}
	return s.primary.CheckCursor(ctx, after)
}
