package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/natsink"
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
func streamBroker(cfg config.Config, pool *pgxpool.Pool, owner string, logger *slog.Logger,
	poll time.Duration, pokes func() <-chan struct{}) (b *eventstream.Broker, run func(context.Context), check *httpapi.ReadyCheck, err error) {
	if cfg.StreamSource != config.StreamSourceNATS {
		b = eventstream.NewBroker(pool, eventstream.BrokerOptions{Logger: logger})
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
	b = eventstream.NewSourceBroker(src, eventstream.BrokerOptions{Logger: logger, CatchUpPage: eventstream.MaxLimit})
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
