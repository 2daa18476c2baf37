// The Source's live feed: the stream's head and one pull consumer per
// process, read in order, its sequence checked for gaps.

package natsink

import (
	"context"
	"errors"
	"fmt"
	"time"

	natsgo "github.com/nats-io/nats.go"

	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/outbox"
)

// Run feeds b from the live consumer until ctx ends, then closes b (every
// stream ends with ErrBrokerClosed) and the live consumer. A read waits
// up to LongPoll for a message, so Run needs no poll interval nor pokes;
// a failed read (NATS down) is logged and retried after a back-off, and
// meanwhile the streams stay open, send their heartbeats and go on from
// the next event when NATS is back: no gap, no repeat.
func (s *Source) Run(ctx context.Context, b *eventstream.Broker) {
	defer b.Close()
	defer func() {
		s.liveMu.Lock()
		defer s.liveMu.Unlock()
		s.dropLiveLocked()
	}()
	var backoff time.Duration
	for ctx.Err() == nil {
		_, err := b.Poll(ctx)
		if ctx.Err() != nil {
			return
		}
		s.setFailure(err)
		if err == nil {
			backoff = 0
			continue
		}
		backoff = min(max(2*backoff, s.cfg.ReconnectWait/4), runBackoffMax)
		s.logger.Warn("event stream source: read JetStream", "err", err, "retry_in", backoff.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

// Head is the position of the stream's newest event, zero for an empty
// stream or none yet. It also reads the newest Recent events into memory,
// with the live consumer, which then goes on after them.
func (s *Source) Head(ctx context.Context) (outbox.Position, error) {
	info, err := s.streamInfo(ctx)
	if errors.Is(err, natsgo.ErrStreamNotFound) {
		return outbox.Position{}, nil // nothing forwarded yet: every event is new
	}
	if err != nil {
		return outbox.Position{}, err
	}
	if info.State.Msgs == 0 {
		return outbox.Position{}, nil
	}
	start := info.State.FirstSeq
	if n := uint64(s.cfg.Recent); info.State.LastSeq >= n && info.State.LastSeq-n+1 > start {
		start = info.State.LastSeq - n + 1
	}
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	s.dropLiveLocked()
	s.forgetRecent()
	c, err := s.newConsumer(ctx, SubjectPrefix+".>", start, liveInactive)
	if err != nil {
		return outbox.Position{}, err
	}
	if c.pending, err = s.consumerPending(c); err != nil {
		_ = c.sub.Unsubscribe()
		return outbox.Position{}, err
	}
	s.live = c
	for c.pending > 0 {
		if _, err := s.fetchLive(ctx, min(c.pending, 500)); err != nil {
			s.dropLiveLocked()
			return outbox.Position{}, err
		}
		if s.live == nil { // a delivery was lost: read the head again
			return outbox.Position{}, errors.New("JetStream consumer lost a message while reading the head")
		}
	}
	if c.after.IsZero() {
		s.dropLiveLocked() // no event in the stream after all
	}
	return c.after, nil
}

// ReadAfter returns the next events of the stream after `after`, in log
// order, waiting up to LongPoll for one when none is there. It reads the
// process's live consumer, (re)made when it is not at `after` or the
// connection was lost since it was made.
func (s *Source) ReadAfter(ctx context.Context, after outbox.Position, limit int) ([]outbox.Stored, error) {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	if c := s.live; c != nil && (c.after != after || c.reconnects != s.conn.Stats().Reconnects) {
		s.dropLiveLocked()
	}
	if s.live == nil {
		start, err := s.startAfter(ctx, after)
		if errors.Is(err, natsgo.ErrStreamNotFound) {
			// Nothing forwarded yet: the sink creates the stream before
			// its first event.
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(s.cfg.LongPoll):
				return nil, nil
			}
		}
		if err != nil {
			return nil, err
		}
		c, err := s.newConsumer(ctx, SubjectPrefix+".>", start, liveInactive)
		if err != nil {
			return nil, err
		}
		c.after = after
		s.live = c
	}
	c := s.live
	if c.pending > 0 { // known to be there: take them at once
		return s.fetchLive(ctx, min(c.pending, uint64(max(limit, 1))))
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.LongPoll)
	defer cancel()
	msgs, err := c.sub.Fetch(1, natsgo.Context(wctx))
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, natsgo.ErrTimeout)):
		// Nothing new. A pull to a consumer that is gone (NATS restarted
		// without the connection noticing, or it was deleted) is never
		// answered: make sure it is still there.
		if _, err := c.sub.ConsumerInfo(); err != nil {
			s.dropLiveLocked()
			return nil, s.unavailable(fmt.Errorf("live consumer of stream %s: %w", s.cfg.Stream, err))
		}
		return nil, nil
	case err != nil:
		s.dropLiveLocked()
		return nil, s.unavailable(fmt.Errorf("read stream %s: %w", s.cfg.Stream, err))
	}
	return s.accept(msgs), nil
}

// fetchLive fetches n messages known to be waiting for the live consumer.
func (s *Source) fetchLive(ctx context.Context, n uint64) ([]outbox.Stored, error) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	msgs, err := s.live.sub.Fetch(int(n), natsgo.Context(rctx))
	if err != nil && len(msgs) == 0 {
		s.dropLiveLocked()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, s.unavailable(fmt.Errorf("read stream %s: %w", s.cfg.Stream, err))
	}
	return s.accept(msgs), nil
}

// accept takes the live consumer's messages in order: it keeps the events
// after the last one returned and remembers them. A gap in the consumer's
// sequence is a lost delivery: the consumer is dropped there, and the next
// read starts again after the last event returned.
func (s *Source) accept(msgs []*natsgo.Msg) []outbox.Stored {
	c := s.live
	var out []outbox.Stored
	for _, m := range msgs {
		se, ok, err := s.take(c, m)
		e := se.e
		if err != nil {
			s.logger.Warn("event stream source: JetStream delivery out of sequence; reading again", "err", err)
			s.dropLiveLocked()
			break
		}
		if !ok || !c.after.Less(e.Position) {
			continue // not an event of the log, or at or before one already returned
		}
		out = append(out, e)
		c.after = e.Position
		s.remember(se)
	}
	return out
}

// dropLiveLocked deletes the live consumer; callers hold liveMu (or own
// the source, as Run at its end).
func (s *Source) dropLiveLocked() {
	if s.live != nil {
		_ = s.live.sub.Unsubscribe()
		s.live = nil
	}
}

// errDeliveryLost is a consumer's message that does not follow the last
// one it delivered: one was lost in between.
var errDeliveryLost = errors.New("a delivery was lost")

// take checks that m follows the last message c delivered, advances c,
// and decodes m, with its stream sequence. ok is false for a message that is not an event of the
// log (logged and skipped); errDeliveryLost when one was lost before m.
func (s *Source) take(c *consumer, m *natsgo.Msg) (seqEvent, bool, error) {
	meta, err := m.Metadata()
	if err != nil {
		return seqEvent{}, false, fmt.Errorf("%w: %w", errDeliveryLost, err)
	}
	if meta.Sequence.Consumer != c.delivered+1 {
		return seqEvent{}, false, errDeliveryLost
	}
	c.delivered, c.pending = meta.Sequence.Consumer, meta.NumPending
	e, err := decode(m)
	if err != nil {
		s.logger.Error("event stream source: a stream message is not an event of the log; skipped",
			"seq", meta.Sequence.Stream, "subject", m.Subject, "err", err)
		return seqEvent{}, false, nil
	}
	return seqEvent{seq: meta.Sequence.Stream, e: e}, true, nil
}
