package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/natsink"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/queries"
)

// jetStreamLagWarn is the JetStream sink's lag past which /readyz reports
// degraded: events are waiting for NATS.
const jetStreamLagWarn = time.Minute

// jetStreamConfig is the JetStream sink's share of the configuration; ok
// is false without COMPUTE_NATS_URL, and then nothing of NATS is built.
func jetStreamConfig(cfg config.Config, owner string) (c natsink.Config, ok bool) {
	if cfg.NATSURL == "" {
		return natsink.Config{}, false
	}
	return natsink.Config{
		URL: cfg.NATSURL, Creds: cfg.NATSCreds, Name: "compute " + owner,
		Stream: cfg.NATSStream, Storage: cfg.NATSStorage, Replicas: cfg.NATSReplicas,
		MaxAge: cfg.NATSMaxAge, DuplicateWindow: cfg.NATSDuplicateWindow,
	}, true
}

// startJetStream runs the dispatcher role's JetStream sink: the NATS
// connection, the process's watermill Router with the forwarder as its
// handler, and the dispatcher that feeds the forwarder's subscriber under
// the lease singleton:outbox-dispatch:jetstream (the Router first: the
// subscriber's deliveries wait for its subscription). It returns the
// /readyz check of the connection. Everything stops with ctx, the
// connection last.
func startJetStream(ctx context.Context, nc natsink.Config, pool *pgxpool.Pool, owner string, obs observability,
	poll time.Duration, pokes <-chan struct{}, logger *slog.Logger, goRun func(func())) (httpapi.ReadyCheck, error) {
	sink, err := natsink.Connect(nc, logger, obs.registry)
	if err != nil {
		return httpapi.ReadyCheck{}, err
	}
	router, err := outbox.NewRouter(logger, obs.registry)
	if err != nil {
		_ = sink.Close()
		return httpapi.ReadyCheck{}, err
	}
	sub := outbox.NewSubscriber(natsink.SinkID, logger)
	sink.Route(router, sub, pool)
	stopped := make(chan struct{})
	goRun(func() {
		defer close(stopped)
		if err := router.Run(ctx); err != nil {
			logger.Error("watermill router", "err", err)
		}
		if err := sink.Close(); err != nil {
			logger.Warn("close NATS connection", "err", err)
		}
	})
	select {
	case <-router.Running():
	case <-stopped:
		return httpapi.ReadyCheck{}, errors.New("the watermill router stopped before it ran")
	}
	logger.Info("watermill router running", "handlers", []string{natsink.SinkID}, "stream", nc.Stream)
	d := outbox.NewDispatcher(pool, owner, sub, logger)
	obs.dispatcher(d)
	goRun(func() { d.Run(ctx, poll, pokes) })
	return jetStreamCheck(sink), nil
}

// jetStreamCheck reports, in /readyz of a process that runs the sink,
// whether it is connected to NATS and its last publish succeeded.
// Degraded, never unavailable: with NATS down the process still serves,
// projects and delivers webhooks, and the sink catches up once NATS is
// back.
func jetStreamCheck(s *natsink.Sink) httpapi.ReadyCheck {
	return httpapi.ReadyCheck{Name: "nats.connection", Run: func(context.Context) httpapi.CheckResult {
		if err := s.Health(); err != nil {
			return httpapi.CheckResult{Status: httpapi.CheckDegraded, Message: err.Error()}
		}
		return httpapi.CheckResult{Status: httpapi.CheckOK}
	}}
}

// jetStreamLagCheck reports, in /readyz of every process when the sink is
// configured, how long the oldest event not yet in JetStream has waited
// (business time); degraded past jetStreamLagWarn, never unavailable. It
// reads the database, so an API-only process, which holds no NATS
// connection, reports it too.
func jetStreamLagCheck(pool *pgxpool.Pool, clk *clock.Clock) httpapi.ReadyCheck {
	return httpapi.ReadyCheck{Name: "nats.lag", Run: func(ctx context.Context) httpapi.CheckResult {
		lag, err := queries.New(pool).SinkLag(ctx, natsink.SinkID, clk.Now())
		if err != nil {
			return httpapi.CheckResult{Status: httpapi.CheckDegraded, Message: httpapi.CheckFailure(err, "could not read the JetStream sink's lag")}
		}
		secs := lag.Seconds()
		res := httpapi.CheckResult{Status: httpapi.CheckOK, Seconds: &secs}
		if lag > jetStreamLagWarn {
			res.Status, res.Message = httpapi.CheckDegraded, "events are waiting for NATS JetStream"
		}
		return res
	}}
}
