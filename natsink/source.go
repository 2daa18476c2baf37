package natsink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	conn, err := connect(cfg.URL, cfg.Creds, cfg.Name, cfg.ReconnectWait, logger)
	if err != nil {
		return nil, err
	}
	js, err := conn.JetStream(natsgo.MaxWait(cfg.RequestTimeout))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("NATS JetStream: %w", err)
	}
	return &Source{cfg: cfg, conn: conn, js: js, logger: logger}, nil
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
		return nil, s.unavailable(fmt.Errorf("consume stream %s (%s from %d): %w", s.cfg.Stream, filter, start, err))
	}
	return &consumer{sub: sub, reconnects: reconnects}, nil
}

// consumerPending is how many messages a new consumer has to deliver.
func (s *Source) consumerPending(c *consumer) (uint64, error) {
	info, err := c.sub.ConsumerInfo()
	if err != nil {
		return 0, s.unavailable(fmt.Errorf("read consumer: %w", err))
	}
	return info.NumPending, nil
}

func (s *Source) streamInfo(ctx context.Context) (*natsgo.StreamInfo, error) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	info, err := s.js.StreamInfo(s.cfg.Stream, natsgo.Context(rctx))
	if errors.Is(err, natsgo.ErrStreamNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, s.unavailable(fmt.Errorf("read stream %s: %w", s.cfg.Stream, err))
	}
	return info, nil
}

// unavailable marks err as NATS being unreachable: 503 for a stream that
// has not started, so the client retries. While the connection is down
// the error says so first (notConnected).
func (s *Source) unavailable(err error) error {
	return core.Wrap(core.CodeUnavailable, notConnected(s.conn, err), "the event stream's source (NATS JetStream) is unavailable: retry")
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
