// The Source's history: catch-up pages of a stream's scope, from the
// newest events kept in memory or from a short-lived consumer, and the
// check of a resumed cursor against the stream's retention.

package natsink

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/outbox"
	natsgo "github.com/nats-io/nats.go"
)

// Page returns up to limit events in scope after `after`: from memory
// when `after` is among the newest events kept there, else from a consumer
// of the scope's subjects started after it. Like the outbox reader's, a
// cursor pruned away (older than the stream's first message) or one that
// is no event of the stream is CURSOR_EXPIRED, checked after the read.
func (s *Source) Page(ctx context.Context, scope eventstream.Scope, after outbox.Position, limit int) (eventstream.Page, error) {
	if limit <= 0 {
		limit = eventstream.DefaultLimit
	}
	if events, ok, err := s.recentPage(scope, after, limit); ok {
		if err != nil {
			return eventstream.Page{}, err
		}
		return page(events, after), nil
	}
	events, err := s.readRange(ctx, scope, after, limit)
	if cerr := s.checkStream(ctx, after); cerr != nil {
		return eventstream.Page{}, cerr
	}
	if err != nil {
		return eventstream.Page{}, err
	}
	return page(events, after), nil
}

func page(events []outbox.Stored, after outbox.Position) eventstream.Page {
	p := eventstream.Page{Events: events, Next: after}
	if n := len(events); n > 0 {
		p.Next = events[n-1].Position
	}
	return p
}

// readRange reads up to limit events in scope after `after` with a
// consumer of its own on the scope's subjects, until it has limit of them
// or the consumer has nothing more.
func (s *Source) readRange(ctx context.Context, scope eventstream.Scope, after outbox.Position, limit int) ([]outbox.Stored, error) {
	start, err := s.locate(ctx, after)
	if errors.Is(err, natsgo.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c, err := s.newConsumer(ctx, subjectFilter(scope), start, historyInactive)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.sub.Unsubscribe() }()
	if c.pending, err = s.consumerPending(c); err != nil {
		return nil, err
	}
	var out []outbox.Stored
	for c.pending > 0 && len(out) < limit {
		rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
		msgs, err := c.sub.Fetch(int(min(c.pending, uint64(limit-len(out)))), natsgo.Context(rctx))
		cancel()
		if err != nil && len(msgs) == 0 {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, s.unavailable(fmt.Errorf("read stream %s after %s: %w", s.cfg.Stream, after, err))
		}
		for _, m := range msgs {
			se, ok, err := s.take(c, m)
			e := se.e
			if err != nil {
				return nil, s.unavailable(fmt.Errorf("read stream %s after %s: %w", s.cfg.Stream, after, err))
			}
			if !ok || !after.Less(e.Position) || !scope.Matches(e.Event) {
				continue
			}
			out = append(out, e)
			after = e.Position
			if len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

// CheckCursor returns CURSOR_EXPIRED when events after `after` may be
// gone from the stream, or `after` is no event of it: the outbox reader's
// rules (eventstream.Reader's CheckCursor) applied to the stream. A cursor
// older than the stream's first message has lost what followed it. One
// among the stream's positions where no message sits is no event of the
// log: after the database was restored to an earlier point (and the
// stream purged), it is a lost event's, whose position the restored log's
// new events surround (a point-in-time recovery reuses the lost
// transaction ids), and resuming after it would skip those below it. A
// cursor among the events kept in memory is checked there, with no
// request to NATS. One past the stream's last message is not checked
// here: the stream may not have it yet (the API process checks it on the
// primary).
func (s *Source) CheckCursor(ctx context.Context, after outbox.Position) error {
	if after.IsZero() {
		return nil
	}
	if inMemory, err := s.checkRecent(after); inMemory {
		return err
	}
	return s.checkStream(ctx, after)
}

// noEvent is CURSOR_EXPIRED for a cursor among the stream's positions
// where no event sits.
func noEvent(after outbox.Position) error {
	return core.Errorf(core.CodeCursorExpired,
		"cursor %s is no event of this log (another installation's, or from before a restore): list events again without a cursor", after)
}

// checkRecent is CheckCursor from memory; inMemory is false when `after`
// is not between the oldest and the newest event kept there.
func (s *Source) checkRecent(after outbox.Position) (inMemory bool, err error) {
	s.recentMu.Lock()
	defer s.recentMu.Unlock()
	return s.checkRecentLocked(after)
}

func (s *Source) checkRecentLocked(after outbox.Position) (inMemory bool, err error) {
	n := len(s.recent)
	if n == 0 || after.Less(s.recent[0].e.Position) || s.recent[n-1].e.Position.Less(after) {
		return false, nil
	}
	i := sort.Search(n, func(i int) bool { return !s.recent[i].e.Position.Less(after) })
	if s.recent[i].e.Position != after {
		return true, noEvent(after)
	}
	return true, nil
}

// checkStream is CheckCursor against the stream itself.
func (s *Source) checkStream(ctx context.Context, after outbox.Position) error {
	if after.IsZero() {
		return nil
	}
	expired := core.Errorf(core.CodeCursorExpired,
		"cursor %s is older than the retained event history: list events again without a cursor", after)
	info, err := s.streamInfo(ctx)
	if errors.Is(err, natsgo.ErrStreamNotFound) {
		return expired
	}
	if err != nil {
		return err
	}
	if info.State.Msgs == 0 {
		return expired
	}
	first, _, found, err := s.positionFrom(ctx, info.State.FirstSeq, info.State.LastSeq+1)
	if err != nil {
		return err
	}
	if !found || after.Less(first) {
		return expired
	}
	at, err := s.search(ctx, func(pos outbox.Position) bool { return !pos.Less(after) })
	if err != nil {
		return err
	}
	pos, _, found, err := s.positionFrom(ctx, at, info.State.LastSeq+1)
	if err != nil {
		return err
	}
	if found && pos != after {
		return noEvent(after)
	}
	return nil // at an event, or past the last one
}

// recentPage is Page from memory; ok is false when `after` is older than
// the oldest event kept there. A short page covers every event up to the
// newest read by the live feed, so up to the broker's head. A cursor
// among the events in memory where none sits is CURSOR_EXPIRED
// (CheckCursor).
func (s *Source) recentPage(scope eventstream.Scope, after outbox.Position, limit int) ([]outbox.Stored, bool, error) {
	s.recentMu.Lock()
	defer s.recentMu.Unlock()
	if len(s.recent) == 0 || after.Less(s.recent[0].e.Position) {
		return nil, false, nil
	}
	if _, err := s.checkRecentLocked(after); err != nil {
		return nil, true, err
	}
	i := sort.Search(len(s.recent), func(i int) bool { return after.Less(s.recent[i].e.Position) })
	var out []outbox.Stored
	for ; i < len(s.recent) && len(out) < limit; i++ {
		if scope.Matches(s.recent[i].e.Event) {
			out = append(out, s.recent[i].e)
		}
	}
	return out, true, nil
}

// remember keeps e, the stream's next event after the newest in memory,
// and lets the oldest go past twice Recent.
func (s *Source) remember(e seqEvent) {
	s.recentMu.Lock()
	defer s.recentMu.Unlock()
	s.recent = append(s.recent, e)
	if len(s.recent) >= 2*s.cfg.Recent {
		s.recent = append([]seqEvent(nil), s.recent[len(s.recent)-s.cfg.Recent:]...)
	}
}

func (s *Source) forgetRecent() {
	s.recentMu.Lock()
	defer s.recentMu.Unlock()
	s.recent = nil
}

// subjectFilter is the subjects a scope may see: one tenant's
// (compute.<tenant>.>) or every one, narrowed to a single type when the
// scope asks for one (a consumer takes one filter on nats-server 2.9).
// Fleet-wide events (compute._fleet.…) are only in an operator's.
func subjectFilter(scope eventstream.Scope) string {
	tenant := "*"
	if !scope.AllTenants {
		tenant = escape(scope.Tenant, false)
	}
	if len(scope.Types) == 1 {
		return SubjectPrefix + "." + tenant + "." + typeTokens(scope.Types[0])
	}
	return SubjectPrefix + "." + tenant + ".>"
}
