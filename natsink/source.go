package natsink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	natsgo "github.com/nats-io/nats.go"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/outbox"
)

// Defaults of SourceConfig: a zero field means these.
const (
	DefaultSourceRequestTimeout = 5 * time.Second
	DefaultSourceLongPoll       = 5 * time.Second
	DefaultSourceRecent         = 4096
)

const (
	// liveInactive is how long JetStream keeps the live consumer of a
	// process that stopped pulling (a process that died); the process
	// pulls at least every LongPoll while it lives.
	liveInactive = time.Minute
	// historyInactive is the same for a stream's catch-up consumer, which
	// is deleted as soon as its page is read.
	historyInactive = 30 * time.Second
	// maxProbe bounds the messages one position lookup skips over when
	// messages were deleted from the middle of the stream by hand.
	maxProbe = 64
	// runBackoffMax bounds the pause between two failed reads of Run.
	runBackoffMax = 5 * time.Second
)

// SourceConfig is where an API process reads the stream back
// (COMPUTE_STREAM_SOURCE=nats): the connection settings and stream of the
// sink's Config.
type SourceConfig struct {
	URL, Creds, Name string
	Stream           string
	// ReconnectWait is the pause between reconnection attempts, which
	// never stop.
	ReconnectWait time.Duration
	// RequestTimeout bounds one JetStream API request and one fetch of a
	// catch-up page.
	RequestTimeout time.Duration
	// LongPoll is how long one read of the live feed waits for a new
	// message before it returns none (and checks that its consumer is
	// still there).
	LongPoll time.Duration
	// Recent is how many of the newest events the source keeps in memory:
	// a stream that resumes from one of them is caught up from memory,
	// without a request to NATS.
	Recent int
}

func (c SourceConfig) withDefaults() SourceConfig {
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.ReconnectWait <= 0 {
		c.ReconnectWait = DefaultReconnectWait
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultSourceRequestTimeout
	}
	if c.LongPoll <= 0 {
		c.LongPoll = DefaultSourceLongPoll
	}
	if c.Recent <= 0 {
		c.Recent = DefaultSourceRecent
	}
	return c
}

// Source reads the event log back from the JetStream stream the sink
// fills, for an API process's event broker: with COMPUTE_STREAM_SOURCE=nats
// the SSE streams (GET /v1/events/stream, the console's live tail) are
// served from NATS, and API processes add no load on the primary for
// streams. It is an eventstream.Source, so the broker, its fan-out, the
// catch-up, heartbeats, limits and slow-client drops are the ones of the
// PostgreSQL source.
//
//   - The live feed (ReadAfter) is one ephemeral pull consumer per process
//     on every subject, read in stream order, which is log order; the
//     broker fans each event out to every stream in memory.
//   - Ids are outbox positions, read from each message's position header,
//     so SSE ids and Last-Event-ID are the PostgreSQL source's, and the
//     data is the message's payload, the envelope SSE sends.
//   - A stream that resumes (Page) is caught up from the newest Recent
//     events kept in memory, or else by a consumer of its own, filtered by
//     its tenant's subjects, started at the stream sequence found by a
//     binary search on the position headers (get by sequence only: Debian's
//     nats-server 2.9.10 crashes on a get by subject that finds nothing).
//   - Every event is checked against the stream's scope again in memory,
//     and must be on the subject its tenant and type give.
//   - A cursor older than the stream's first message is CURSOR_EXPIRED,
//     as one older than the outbox's oldest event is.
type Source struct {
	cfg    SourceConfig
	conn   *natsgo.Conn
	js     natsgo.JetStreamContext
	logger *slog.Logger

	// liveMu is held by ReadAfter (and Head, which may start the live
	// consumer): one live read at a time.
	liveMu sync.Mutex
	live   *consumer

	// recent are the newest events read by the live feed, with their
	// stream sequences: every event of the stream from recent[0] to the
	// last, in order.
	recentMu sync.Mutex
	recent   []seqEvent

	failureMu sync.Mutex
	failure   error
}

type seqEvent struct {
	seq uint64
	e   outbox.Stored
}

// consumer is one ephemeral pull consumer and how far it was read.
type consumer struct {
	sub        *natsgo.Subscription
	delivered  uint64          // consumer sequence of the last message received
	pending    uint64          // messages left after it when it was sent
	reconnects uint64          // the connection's reconnects when it was made
	after      outbox.Position // the last position returned (live feed)
}

var _ eventstream.Source = (*Source)(nil)

// OpenSource connects to cfg.URL in the background (a server down at
// start only delays the streams) and returns the source.
func OpenSource(cfg SourceConfig, logger *slog.Logger) (*Source, error) {
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("stream_source", "nats")
	opts := []natsgo.Option{
		natsgo.Name(cfg.Name),
		natsgo.RetryOnFailedConnect(true), natsgo.MaxReconnects(-1), natsgo.ReconnectWait(cfg.ReconnectWait),
		// Requests fail at once while disconnected rather than wait in a
		// buffer for their timeout.
		natsgo.ReconnectBufSize(-1),
		natsgo.ConnectHandler(func(c *natsgo.Conn) { logger.Info("nats connected", "server", c.ConnectedUrlRedacted()) }),
		natsgo.ReconnectHandler(func(c *natsgo.Conn) { logger.Info("nats reconnected", "server", c.ConnectedUrlRedacted()) }),
		natsgo.DisconnectErrHandler(func(_ *natsgo.Conn, err error) { logger.Warn("nats disconnected", "err", err) }),
	}
	if cfg.Creds != "" {
		opts = append(opts, natsgo.UserCredentials(cfg.Creds))
	}
	conn, err := natsgo.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS: %w", err)
	}
	js, err := conn.JetStream(natsgo.MaxWait(cfg.RequestTimeout))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("NATS JetStream: %w", err)
	}
	return &Source{cfg: cfg, conn: conn, js: js, logger: logger}, nil
}

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

// Close closes the connection. Call it after Run has returned.
func (s *Source) Close() { s.conn.Close() }

// Health is nil while the source is connected and its last read
// succeeded; otherwise why not, for /readyz.
func (s *Source) Health() error {
	if !s.conn.IsConnected() {
		return fmt.Errorf("not connected to NATS (%s)", s.conn.Status())
	}
	s.failureMu.Lock()
	defer s.failureMu.Unlock()
	return s.failure
}

func (s *Source) setFailure(err error) {
	s.failureMu.Lock()
	defer s.failureMu.Unlock()
	s.failure = err
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
	if c.pending, err = consumerPending(c); err != nil {
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
			return nil, unavailable(fmt.Errorf("live consumer of stream %s: %w", s.cfg.Stream, err))
		}
		return nil, nil
	case err != nil:
		s.dropLiveLocked()
		return nil, unavailable(fmt.Errorf("read stream %s: %w", s.cfg.Stream, err))
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
		return nil, unavailable(fmt.Errorf("read stream %s: %w", s.cfg.Stream, err))
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
		meta, err := m.Metadata()
		if err != nil || meta.Sequence.Consumer != c.delivered+1 {
			s.logger.Warn("event stream source: JetStream delivery out of sequence; reading again", "err", err)
			s.dropLiveLocked()
			break
		}
		c.delivered, c.pending = meta.Sequence.Consumer, meta.NumPending
		e, err := decode(m)
		if err != nil {
			s.logger.Error("event stream source: a stream message is not an event of the log; skipped",
				"seq", meta.Sequence.Stream, "subject", m.Subject, "err", err)
			continue
		}
		if !c.after.Less(e.Position) {
			continue // at or before an event already returned
		}
		out = append(out, e)
		c.after = e.Position
		s.remember(seqEvent{seq: meta.Sequence.Stream, e: e})
	}
	return out
}

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
		if !found || after.Less(pos) {
			hi = mid // every message from mid on is after `after`
		} else {
			lo = at + 1 // every message up to at is not
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
			return outbox.Position{}, 0, false, unavailable(fmt.Errorf("read message %d of stream %s: %w", next, s.cfg.Stream, err))
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

// Page returns up to limit events in scope after `after`: from memory
// when `after` is among the newest events kept there, else from a consumer
// of the scope's subjects started after it. Like the outbox reader's, a
// cursor pruned away (older than the stream's first message) is
// CURSOR_EXPIRED, checked after the read.
func (s *Source) Page(ctx context.Context, scope eventstream.Scope, after outbox.Position, limit int) (eventstream.Page, error) {
	if limit <= 0 {
		limit = eventstream.DefaultLimit
	}
	if events, ok := s.recentPage(scope, after, limit); ok {
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
	if c.pending, err = consumerPending(c); err != nil {
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
			return nil, unavailable(fmt.Errorf("read stream %s after %s: %w", s.cfg.Stream, after, err))
		}
		for _, m := range msgs {
			meta, err := m.Metadata()
			if err != nil || meta.Sequence.Consumer != c.delivered+1 {
				return nil, unavailable(fmt.Errorf("read stream %s after %s: a delivery was lost", s.cfg.Stream, after))
			}
			c.delivered, c.pending = meta.Sequence.Consumer, meta.NumPending
			e, err := decode(m)
			if err != nil {
				s.logger.Error("event stream source: a stream message is not an event of the log; skipped",
					"seq", meta.Sequence.Stream, "subject", m.Subject, "err", err)
				continue
			}
			if !after.Less(e.Position) || !scope.Matches(e.Event) {
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
// gone from the stream: the outbox reader's rule (eventstream.Reader's
// CheckCursor) applied to the stream's first message. A cursor at or after
// the oldest event kept in memory never expires: everything after it is
// there.
func (s *Source) CheckCursor(ctx context.Context, after outbox.Position) error {
	if after.IsZero() {
		return nil
	}
	s.recentMu.Lock()
	inMemory := len(s.recent) > 0 && !after.Less(s.recent[0].e.Position)
	s.recentMu.Unlock()
	if inMemory {
		return nil
	}
	return s.checkStream(ctx, after)
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
	return nil
}

// recentPage is Page from memory; ok is false when `after` is older than
// the oldest event kept there. A short page covers every event up to the
// newest read by the live feed, so up to the broker's head.
func (s *Source) recentPage(scope eventstream.Scope, after outbox.Position, limit int) ([]outbox.Stored, bool) {
	s.recentMu.Lock()
	defer s.recentMu.Unlock()
	if len(s.recent) == 0 || after.Less(s.recent[0].e.Position) {
		return nil, false
	}
	i := sort.Search(len(s.recent), func(i int) bool { return after.Less(s.recent[i].e.Position) })
	var out []outbox.Stored
	for ; i < len(s.recent) && len(out) < limit; i++ {
		if scope.Matches(s.recent[i].e.Event) {
			out = append(out, s.recent[i].e)
		}
	}
	return out, true
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

// newConsumer makes an ephemeral pull consumer on filter from the stream
// sequence start: no acks (it only reads), in memory, deleted by
// JetStream after inactive without a pull.
// (No nats.Context here: it would unsubscribe when its context ends; the
// creation waits RequestTimeout at most, the JetStream context's MaxWait.)
func (s *Source) newConsumer(ctx context.Context, filter string, start uint64, inactive time.Duration) (*consumer, error) {
	reconnects := s.conn.Stats().Reconnects
	sub, err := s.js.PullSubscribe(filter, "", natsgo.BindStream(s.cfg.Stream), natsgo.StartSequence(max(start, 1)),
		natsgo.AckNone(), natsgo.InactiveThreshold(inactive), natsgo.ConsumerMemoryStorage())
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, unavailable(fmt.Errorf("consume stream %s (%s from %d): %w", s.cfg.Stream, filter, start, err))
	}
	return &consumer{sub: sub, reconnects: reconnects}, nil
}

// consumerPending is how many messages a new consumer has to deliver.
func consumerPending(c *consumer) (uint64, error) {
	info, err := c.sub.ConsumerInfo()
	if err != nil {
		return 0, unavailable(fmt.Errorf("read consumer: %w", err))
	}
	return info.NumPending, nil
}

// dropLiveLocked deletes the live consumer; callers hold liveMu (or own
// the source, as Run at its end).
func (s *Source) dropLiveLocked() {
	if s.live != nil {
		_ = s.live.sub.Unsubscribe()
		s.live = nil
	}
}

func (s *Source) streamInfo(ctx context.Context) (*natsgo.StreamInfo, error) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	info, err := s.js.StreamInfo(s.cfg.Stream, natsgo.Context(rctx))
	if errors.Is(err, natsgo.ErrStreamNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, unavailable(fmt.Errorf("read stream %s: %w", s.cfg.Stream, err))
	}
	return info, nil
}

// unavailable marks err as NATS being unreachable: 503 for a stream that
// has not started, so the client retries.
func unavailable(err error) error {
	return core.Wrap(core.CodeUnavailable, err, "the event stream's source (NATS JetStream) is unavailable: retry")
}

// decode turns a stream message back into the event the sink published:
// the payload is the envelope, the headers the outbox message's metadata
// (outbox.EventFromMessage), and it must be on the subject its tenant and
// type give, so that a subject filter and the scope agree.
func decode(m *natsgo.Msg) (outbox.Stored, error) {
	wm, err := (&wmnats.NATSMarshaler{}).Unmarshal(m)
	if err != nil {
		return outbox.Stored{}, err
	}
	e, err := outbox.EventFromMessage(wm)
	if err != nil {
		return outbox.Stored{}, err
	}
	if want := Subject(e.TenantID, e.Type); m.Subject != want {
		return outbox.Stored{}, fmt.Errorf("event %s of tenant %q is on subject %s, not %s", e.ID, e.TenantID, m.Subject, want)
	}
	return e, nil
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
