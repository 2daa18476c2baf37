package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/natsink"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/queries"
)

// streamBroker is the api role's event broker, which serves every SSE
// stream of the process (GET /v1/events/stream, the console's live tail),
// and the loop that feeds it until its context ends. With
// COMPUTE_STREAM_SOURCE=postgres (the default) it tails the outbox,
// polling every poll interval or sooner on a poke; with nats it reads the
// JetStream stream the dispatcher's sink fills, through one consumer per
// process, and check is the /readyz check of that connection. Either way
// the stream handler, its ids, catch-up, heartbeats and limits are the
// same.
func streamBroker(cfg config.Config, pool *pgxpool.Pool, replica *queries.Replica, owner string, logger *slog.Logger,
	poll time.Duration, pokes func() <-chan struct{}) (b *eventstream.Broker, run func(context.Context), check *httpapi.ReadyCheck, err error) {
	if cfg.StreamSource != config.StreamSourceNATS {
		var src eventstream.Source = eventstream.OutboxSource(pool)
		if replica != nil { // the outbox from the read replica while it is in rotation
			src = replicaStreamSource(pool, replica)
		}
		b = eventstream.NewSourceBroker(src, eventstream.BrokerOptions{Logger: logger})
		p := pokes()
		return b, func(ctx context.Context) { b.Run(ctx, poll, p) }, nil, nil
	}
	src, err := natsink.OpenSource(natsink.SourceConfig{
		URL: cfg.NATSURL, Creds: cfg.NATSCreds, Name: "compute " + owner + " streams", Stream: cfg.NATSStream,
	}, logger)
	if err != nil {
		return nil, nil, nil, err
	}
	// A catch-up page from JetStream is a consumer of its own: read the
	// largest pages the API allows.
	b = eventstream.NewSourceBroker(&horizonSource{Source: src, primary: eventstream.NewReader(pool)},
		eventstream.BrokerOptions{Logger: logger, CatchUpPage: eventstream.MaxLimit})
	logger.Info("event streams served from NATS JetStream", "stream", cfg.NATSStream)
	return b, func(ctx context.Context) {
			src.Run(ctx, b)
			src.Close()
		}, &httpapi.ReadyCheck{Name: "nats.stream_source", Run: func(context.Context) httpapi.CheckResult {
			// Degraded, never unavailable: open streams wait for NATS and
			// go on without a gap when it is back.
			if err := src.Health(); err != nil {
				return httpapi.CheckResult{Status: httpapi.CheckDegraded, Message: err.Error()}
			}
			return httpapi.CheckResult{Status: httpapi.CheckOK}
		}}, nil
}

// replicaStreamSource is the outbox as a stream source, from the read
// replica while it is in rotation and from the primary (pool) otherwise.
// The live feed reads the standby through replica.DB, whose statements
// are bounded and go to the primary when the standby fails them: every
// stream of the process reads that one feed, and a read left waiting on a
// standby that hangs would stop them all, for as long as it hangs.
func replicaStreamSource(pool *pgxpool.Pool, replica *queries.Replica) eventstream.Source {
	return &horizonSource{Source: &rotatingSource{primary: eventstream.OutboxSource(pool),
		replica: eventstream.OutboxSource(replica.DB()), standby: eventstream.OutboxSource(replica.Pool),
		inRotation: replica.InRotation}, primary: eventstream.NewReader(pool)}
}

// standbyHeadTimeout bounds the read of the standby's head before a
// catch-up page: a standby in rotation answers within milliseconds, and
// one that has not within a second is stalled; the page is then read from
// the primary.
const standbyHeadTimeout = time.Second

// rotatingSource reads the outbox from the read replica while it is in
// rotation, else from the primary. The live feed (Head, ReadAfter) may
// switch at any read: the replica has a prefix of the primary's log, so a
// reader that goes on from its position on the other server skips nothing
// (a replica behind the position only has nothing new yet). A catch-up
// page must be complete up to the live position (a short page ends the
// catch-up), so it is read from the replica only when the replica's log
// reaches every position this source has handed out (mark); else from the
// primary. An event appears on a stream served from the replica once the
// replica has replayed it: after the poke of its commit, or at the next
// poll.
type rotatingSource struct {
	primary, replica eventstream.Source
	// standby is the replica's server alone, where replica may go on to
	// the primary when the standby fails a statement: the head a catch-up
	// page is checked against must be the standby's (unset: replica's).
	standby    eventstream.Source
	inRotation func() bool

	mu   sync.Mutex
	mark outbox.Position // the newest position handed out by Head or ReadAfter
}

func (s *rotatingSource) live() eventstream.Source {
	if s.inRotation() {
		return s.replica
	}
	return s.primary
}

func (s *rotatingSource) raise(p outbox.Position) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mark.Less(p) {
		s.mark = p
	}
}

func (s *rotatingSource) Head(ctx context.Context) (outbox.Position, error) {
	h, err := s.live().Head(ctx)
	if err == nil {
		s.raise(h)
	}
	return h, err
}

func (s *rotatingSource) ReadAfter(ctx context.Context, after outbox.Position, limit int) ([]outbox.Stored, error) {
	evs, err := s.live().ReadAfter(ctx, after, limit)
	if err == nil && len(evs) > 0 {
		s.raise(evs[len(evs)-1].Position)
	}
	return evs, err
}

func (s *rotatingSource) Page(ctx context.Context, scope eventstream.Scope, after outbox.Position, limit int) (eventstream.Page, error) {
	if s.inRotation() {
		s.mu.Lock()
		mark := s.mark
		s.mu.Unlock()
		standby := s.standby
		if standby == nil {
			standby = s.replica
		}
		hctx, cancel := context.WithTimeout(ctx, standbyHeadTimeout)
		h, err := standby.Head(hctx)
		cancel()
		if err == nil && !h.Less(mark) {
			// Complete up to mark: read on the standby, or, for a statement
			// it fails, on the primary, which is ahead of it.
			return s.replica.Page(ctx, scope, after, limit)
		}
	}
	return s.primary.Page(ctx, scope, after, limit)
}

func (s *rotatingSource) CheckCursor(ctx context.Context, after outbox.Position) error {
	return s.live().CheckCursor(ctx, after)
}
