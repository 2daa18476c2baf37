// Finding the stream sequence after an outbox position: a binary search
// over the position headers, reading messages by sequence only.

package natsink

import (
	"context"
	"errors"
	"fmt"

	"github.com/bettercompute/compute/outbox"
	natsgo "github.com/nats-io/nats.go"
)

// startAfter is the stream sequence to read from to get every event after
// `after`: right after the newest event in memory when that is `after` and
// still at its sequence in the stream (the stream may have been recreated),
// otherwise found by a binary search, and memory is forgotten (it must
// stay contiguous).
func (s *Source) startAfter(ctx context.Context, after outbox.Position) (uint64, error) {
	s.recentMu.Lock()
	var last seqEvent
	if n := len(s.recent); n > 0 {
		last = s.recent[n-1]
	}
	s.recentMu.Unlock()
	if last.seq > 0 && last.e.Position == after {
		pos, _, found, err := s.positionFrom(ctx, last.seq, last.seq+1)
		if err != nil {
			return 0, err
		}
		if found && pos == after {
			return last.seq + 1, nil
		}
	}
	s.forgetRecent()
	return s.locate(ctx, after)
}

// locate is the sequence of the stream's first message after `after` (or
// a sequence in a run of deleted messages just before it), or the next
// sequence when there is none: a binary search over the position headers,
// which increase with the sequence.
func (s *Source) locate(ctx context.Context, after outbox.Position) (uint64, error) {
	return s.search(ctx, func(pos outbox.Position) bool { return after.Less(pos) })
}

// search is the sequence of the stream's first message whose position
// satisfies from (false up to some position, true after it), or the next
// sequence when there is none: a binary search over the position headers,
// which increase with the sequence.
func (s *Source) search(ctx context.Context, from func(outbox.Position) bool) (uint64, error) {
	info, err := s.streamInfo(ctx)
	if err != nil {
		return 0, err
	}
	if info.State.Msgs == 0 {
		return info.State.LastSeq + 1, nil
	}
	lo, hi := info.State.FirstSeq, info.State.LastSeq+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		pos, at, found, err := s.positionFrom(ctx, mid, hi)
		if err != nil {
			return 0, err
		}
		if !found || from(pos) {
			hi = mid // every message from mid on satisfies from
		} else {
			lo = at + 1 // every message up to at does not
		}
	}
	return lo, nil
}

// positionFrom is the position of the first message at or after seq and
// before end, with its sequence; found is false when there is none.
func (s *Source) positionFrom(ctx context.Context, seq, end uint64) (outbox.Position, uint64, bool, error) {
	for next, probes := seq, 0; next < end; probes++ {
		if probes == maxProbe {
			return outbox.Position{}, 0, false, fmt.Errorf("stream %s: messages %d to %d are missing", s.cfg.Stream, seq, next)
		}
		rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
		m, err := s.js.GetMsg(s.cfg.Stream, next, natsgo.Context(rctx))
		cancel()
		if errors.Is(err, natsgo.ErrMsgNotFound) {
			// Deleted: by retention (go on from the first message) or by
			// hand.
			info, err := s.streamInfo(ctx)
			if err != nil {
				return outbox.Position{}, 0, false, err
			}
			next = max(next+1, info.State.FirstSeq)
			continue
		}
		if err != nil {
			return outbox.Position{}, 0, false, s.unavailable(fmt.Errorf("read message %d of stream %s: %w", next, s.cfg.Stream, err))
		}
		pos, err := outbox.ParsePosition(m.Header.Get(outbox.MetadataPosition))
		if err == nil && pos.IsZero() {
			err = errors.New("none")
		}
		if err != nil {
			return outbox.Position{}, 0, false, fmt.Errorf("message %d of stream %s: outbox position: %w", next, s.cfg.Stream, err)
		}
		return pos, next, true, nil
	}
	return outbox.Position{}, 0, false, nil
}
