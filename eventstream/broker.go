package eventstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/tracing"
	"github.com/bettercompute/compute/outbox"
)

// Defaults for BrokerOptions.
const (
	DefaultBuffer      = 256
	DefaultBatch       = 500
	DefaultCatchUpPage = 100
)

// ErrDropped ends a stream whose client fell behind the live feed: its
// buffer filled up. The client reconnects with Last-Event-ID and catches up
// from the database, so a slow client costs a reconnect instead of memory.
var ErrDropped = errors.New("event stream dropped: the client fell behind")

// ErrBrokerClosed ends every stream when the broker stops (shutdown); the
// client reconnects, to this process or another, with Last-Event-ID.
var ErrBrokerClosed = errors.New("event broker closed")

// BrokerOptions tune a Broker; zero values take the defaults.
type BrokerOptions struct {
	// Buffer is how many live events one client may have waiting before
	// it is dropped. It bounds the broker's memory per client.
	Buffer int
	// Batch is how many events one Poll reads from the log.
	Batch int
	// CatchUpPage is how many events a stream reads from the database at
	// a time while it catches up with the live feed.
	CatchUpPage int
	// Logger receives poll errors; nil means slog.Default().
	Logger *slog.Logger
	// IdleTimer starts the timer of a stream's heartbeat (Deliver's
	// idleEvery); nil means one on the process clock. For tests, which
	// move the heartbeat's time by hand.
	IdleTimer func(d time.Duration) IdleTimer
}

// Source is where a Broker reads the log: the PostgreSQL outbox (NewBroker,
// COMPUTE_STREAM_SOURCE=postgres) or a copy of it in NATS JetStream
// (natsink.Source, COMPUTE_STREAM_SOURCE=nats). Positions are the outbox's
// in both, so a client's Last-Event-ID resumes on either. Everything else
// (the fan-out, the catch-up, heartbeats, limits, slow-client drops) is
// the Broker's and the stream handler's, whichever the source. The
// outbox's broker runs with Run; natsink.Source, whose ReadAfter waits for
// the next message, feeds its broker with a loop of its own.
type Source interface {
	// Head is the newest event's position, zero when there is none: where
	// the live feed starts.
	Head(ctx context.Context) (outbox.Position, error)
	// ReadAfter returns up to limit events of every tenant strictly after
	// `after`, in log order, with no gap: the live feed, read once per
	// process.
	ReadAfter(ctx context.Context, after outbox.Position, limit int) ([]outbox.Stored, error)
	// Page and CheckCursor are Reader's: a stream's catch-up. Page returns
	// fewer than limit events only when no more events in scope follow
	// (up to at least the Head it returned before).
	Page(ctx context.Context, scope Scope, after outbox.Position, limit int) (Page, error)
	CheckCursor(ctx context.Context, after outbox.Position) error
}

// OutboxSource is the outbox of pool's database as a Source: NewBroker's,
// or a hot standby's (the read replica's, whose outbox is the primary's
// as far as it has replayed it; queries.Replica.DB falls back to the
// primary when the standby fails a read).
func OutboxSource(pool db.DBTX) Source { return outboxSource{NewReader(pool)} }

// outboxSource is the outbox as a Source.
type outboxSource struct{ *Reader }

func (s outboxSource) Head(ctx context.Context) (outbox.Position, error) { return s.head(ctx) }

func (s outboxSource) ReadAfter(ctx context.Context, after outbox.Position, limit int) ([]outbox.Stored, error) {
	return outbox.ReadAfter(ctx, s.q, after, limit)
}

// Broker tails the log once per process and fans each event out, in
// memory, to every connected stream whose scope matches. One reader serves
// any number of clients, so the database sees one keyset query per poll
// instead of one per client, and no client holds a snapshot or an xid.
//
// Each stream has a bounded queue, and the fan-out never blocks on it: a
// stream with Buffer events waiting is dropped (ErrDropped), so memory is
// bounded by Buffer events per client whatever the clients do, and an idle
// client's queue is empty.
type Broker struct {
	src  Source
	opts BrokerOptions

	pollMu sync.Mutex // one Poll at a time; also guards the first head read

	mu      sync.Mutex
	started bool            // head has been read from the database
	head    outbox.Position // everything up to here has been fanned out
	streams map[*Stream]struct{}
	closed  bool

	// pollFailures logs Run's failed polls once per run of them (a
	// database outage fails every poll), not once a poll.
	pollFailures *tracing.FailureStreak
}

// NewBroker returns a broker over pool. Start it with Run (production) or
// step it with Poll (tests). Until the first Poll or Subscribe, it has not
// read the log: it starts at the newest visible event, not at the start.
func NewBroker(pool *pgxpool.Pool, opts BrokerOptions) *Broker {
	return NewSourceBroker(outboxSource{NewReader(pool)}, opts)
}

// NewSourceBroker is NewBroker reading src instead of the outbox.
func NewSourceBroker(src Source, opts BrokerOptions) *Broker {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	if opts.Batch <= 0 {
		opts.Batch = DefaultBatch
	}
	if opts.CatchUpPage <= 0 {
		opts.CatchUpPage = DefaultCatchUpPage
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.IdleTimer == nil {
		opts.IdleTimer = newRealIdleTimer
	}
	return &Broker{src: src, opts: opts, streams: map[*Stream]struct{}{},
		pollFailures: tracing.NewFailureStreak(opts.Logger, "event broker poll", slog.LevelError)}
}

// Run polls until ctx ends: at once while a backlog remains, otherwise
// every poll interval or sooner on a poke (outbox.Listener.Subscribe; nil
// means polling only). A lost poke only delays. Errors are logged and
// retried at the next poll; a run of them once as it starts, once a minute
// and once as it ends (tracing.FailureStreak). On exit every stream ends with ErrBrokerClosed.
func (b *Broker) Run(ctx context.Context, poll time.Duration, pokes <-chan struct{}) {
	defer b.Close()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		n, err := b.Poll(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			b.pollFailures.Failed(err)
		} else {
			b.pollFailures.Succeeded()
			if n == b.opts.Batch {
				continue // more is waiting
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-pokes:
		}
	}
}

// Poll reads one batch of new events and hands each to every matching
// stream, dropping streams whose buffer is full. It returns how many events
// it read. Run calls it in a loop; tests call it directly instead of
// sleeping.
func (b *Broker) Poll(ctx context.Context) (int, error) {
	b.pollMu.Lock()
	defer b.pollMu.Unlock()
	if err := b.startLocked(ctx); err != nil {
		return 0, err
	}
	b.mu.Lock()
	after := b.head
	b.mu.Unlock()
	batch, err := b.src.ReadAfter(ctx, after, b.opts.Batch)
	if err != nil {
		return 0, fmt.Errorf("event broker: %w", err)
	}
	if len(batch) == 0 {
		return 0, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range batch {
		for s := range b.streams {
			if !s.scope.Matches(e.Event) {
				continue
			}
			if !s.offer(e, b.opts.Buffer) {
				b.dropLocked(s, ErrDropped)
			}
		}
	}
	// Advanced under the same lock as the fan-out: a stream subscribing
	// now gets everything after head live and reads the rest from the
	// database, with nothing in between.
	b.head = batch[len(batch)-1].Position
	return len(batch), nil
}

// start reads the head unless that was done, without waiting for a Poll
// in progress once the broker runs.
func (b *Broker) start(ctx context.Context) error {
	b.mu.Lock()
	started := b.started
	b.mu.Unlock()
	if started {
		return nil
	}
	b.pollMu.Lock()
	defer b.pollMu.Unlock()
	return b.startLocked(ctx)
}

// startLocked reads the head once. Callers hold pollMu.
func (b *Broker) startLocked(ctx context.Context) error {
	b.mu.Lock()
	started := b.started
	b.mu.Unlock()
	if started {
		return nil
	}
	head, err := b.src.Head(ctx)
	if err != nil {
		return fmt.Errorf("event broker start: %w", err)
	}
	b.mu.Lock()
	b.head, b.started = head, true
	b.mu.Unlock()
	return nil
}

// Close ends every stream with ErrBrokerClosed and refuses new ones. Call
// it when the server shuts down (http.Server.RegisterOnShutdown): Shutdown
// waits for handlers, and a stream handler only returns when its stream
// ends. Run calls it on exit. Safe to call more than once.
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.streams {
		b.dropLocked(s, ErrBrokerClosed)
	}
}

// Streams returns how many streams are connected, for metrics and tests.
func (b *Broker) Streams() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.streams)
}

// dropLocked ends s with reason. Callers hold mu; after it, nothing is
// offered to s again.
func (b *Broker) dropLocked(s *Stream, reason error) {
	if _, ok := b.streams[s]; !ok {
		return
	}
	delete(b.streams, s)
	s.reason = reason
	close(s.gone)
}

// unsubscribe removes s without a reason: its client went away.
func (b *Broker) unsubscribe(s *Stream) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.streams, s)
}

// Subscribe opens a stream for scope. With after nil it starts at the live
// feed (events from now on). With after set it first catches up from the
// database and then continues live, without gap or repeat; an expired
// cursor is CURSOR_EXPIRED and a closed broker UNAVAILABLE, both before
// anything was sent, so the caller can still answer with an error status.
// The caller must Close the stream.
func (b *Broker) Subscribe(ctx context.Context, scope Scope, after *outbox.Position) (*Stream, error) {
	if err := b.start(ctx); err != nil {
		return nil, err
	}
	s := &Stream{b: b, scope: scope, ready: make(chan struct{}, 1), gone: make(chan struct{})}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, core.Wrap(core.CodeUnavailable, ErrBrokerClosed, "the server is shutting down: reconnect")
	}
	s.liveFrom = b.head // everything after it reaches the live queue
	b.streams[s] = struct{}{}
	b.mu.Unlock()

	if after == nil {
		s.last, s.caughtUp = s.liveFrom, true
		return s, nil
	}
	s.last = *after
	if err := s.prefetch(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}
