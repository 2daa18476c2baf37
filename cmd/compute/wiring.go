package main

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/events"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/nodes"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/queries"
	"github.com/bettercompute/compute/webhook"
)

// services are the feature services one process builds, whatever its roles.
type services struct {
	handlers *commands.Handlers
	webhooks *webhook.Service
	nodes    *nodes.Service
	// router sends dispatched node commands through this process's gateway
	// when it runs one; other processes' gateways pick theirs up on renewal.
	router *nodes.CommandRouter
}

func newServices(pool *pgxpool.Pool, cfg config.Config, logger *slog.Logger) services {
	nodeSvc := &nodes.Service{Pool: pool, Logger: logger}
	return services{
		handlers: &commands.Handlers{Pool: pool, Logger: logger, IdempotencyTTL: cfg.IdempotencyTTL},
		webhooks: webhook.New(pool, webhook.Config{AllowPrivate: cfg.WebhookAllowPrivate, Timeout: cfg.WebhookTimeout}, logger),
		nodes:    nodeSvc,
		router:   &nodes.CommandRouter{Service: nodeSvc},
	}
}

// apiRoutes lists the feature routes the API serves beyond httpapi's own.
func apiRoutes(pool *pgxpool.Pool, s services, broker *events.Broker) []httpapi.Routes {
	return httpapi.Features{
		Commands: s.handlers, Queries: queries.New(pool),
		Broker: broker, EventReader: events.NewReader(pool), Webhooks: s.webhooks, Nodes: s.nodes,
	}.Routes()
}

// registerReconcilers gives the work-queue worker a handler per kind.
func registerReconcilers(w *workqueue.Worker, s services) {
	h := s.handlers
	w.Handle(commands.KindReservationPlace, func(ctx context.Context, it workqueue.Item) error {
		return h.RetryPending(ctx, it.Key)
	})
	w.Handle(commands.KindReservationActivate, func(ctx context.Context, it workqueue.Item) error {
		return h.ActivateReservation(ctx, it.Key)
	})
	w.Handle(commands.KindReservationExpire, func(ctx context.Context, it workqueue.Item) error {
		return h.ExpireReservation(ctx, it.Key)
	})
	w.Handle(webhook.KindDeliver, s.webhooks.Deliver)
	w.Handle(nodes.KindLiveness, s.nodes.HandleLiveness)
	w.Handle(nodes.KindLivenessSweep, s.nodes.HandleSweep)
	w.Handle(nodes.KindCommandDispatch, s.router.HandleDispatch)
}

// sinks lists the durable outbox sinks the dispatcher role delivers, each
// under its own lease and cursor. wakeWorker (nil when this process runs
// no worker) is called after the webhook sink enqueued a batch of
// deliveries.
func sinks(pool *pgxpool.Pool, owner string, s services, wakeWorker func(), logger *slog.Logger) []*outbox.Dispatcher {
	hooks := outbox.NewTxDispatcher(pool, owner, s.webhooks.Scheduler(), logger)
	hooks.AfterBatch = wakeWorker
	out := []*outbox.Dispatcher{hooks}
	for _, p := range projections.All() {
		out = append(out, outbox.NewTxDispatcher(pool, owner, p, logger))
	}
	return out
}
