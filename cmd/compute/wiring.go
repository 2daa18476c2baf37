package main

import (
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/billing"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/queries"
	"github.com/bettercompute/compute/webhook"
)

// services are the feature services one process builds, whatever its roles.
type services struct {
	handlers *commands.Handlers
	// queries are the API's reads; this process's projections wake their
	// minPosition waits (sinks).
	queries  *queries.Service
	webhooks *webhook.Service
	// router sends dispatched node jobs through this process's gateway when
	// it runs one; other processes' gateways pick theirs up on renewal.
	router *gateway.NodeJobRouter
	// streams bound the API's event streams.
	streams httpapi.StreamLimits
	// billing is where closed usage windows go (zero: no billing sink).
	billing billing.Config
	// pruner deletes history past its retention (retention.prune).
	pruner *commands.Pruner
}

// newServices builds the services of one pool. rejected is told of every
// node the placer turns down (a metric).
func newServices(pool *pgxpool.Pool, cfg config.Config, logger *slog.Logger, rejected func(filter string)) services {
	grace := cfg.NodeCredentialGrace
	if grace == 0 {
		grace = -1 // COMPUTE_NODE_CREDENTIAL_GRACE=0 is no grace; commands.Config reads zero as its default
	}
	h := commands.New(pool, commands.Config{Logger: logger, PlacementRejected: rejected, IdempotencyTTL: cfg.IdempotencyTTL, NodeCredentialGrace: grace,
		Test: commands.TestConfig{NodesWithoutDaemons: cfg.NodesWithoutDaemons}, NodeResyncEvery: cfg.NodeResyncEvery,
		MaxOpenNodeJobs: cfg.MaxOpenNodeJobs, MaxPendingReservations: cfg.MaxPendingReservations, FairShareHalfLife: cfg.FairShareHalfLife,
		MinReservationLength: cfg.MinReservationLength, MaxReservationLength: cfg.MaxReservationLength,
		MaxBookingHorizon: cfg.MaxBookingHorizon, MaxTokenTTL: cfg.MaxTokenTTL})
	q := queries.New(pool)
	q.FairShareHalfLife = cfg.FairShareHalfLife
	return services{
		handlers: h,
		queries:  q,
		webhooks: webhook.New(pool, h, webhookConfig(cfg), logger),
		router:   &gateway.NodeJobRouter{Commands: h},
		streams: httpapi.StreamLimits{PerToken: cfg.StreamsPerToken, PerTenant: cfg.StreamsPerTenant,
			MaxLifetime: cfg.StreamMaxLifetime},
		billing: billing.Config{URL: cfg.BillingURL, Secret: cfg.BillingSecret, Timeout: cfg.BillingTimeout,
			MaxWait: billingMaxWait},
		pruner: &commands.Pruner{Pool: pool, Logger: logger, Retention: retentionConfig(cfg), Every: cfg.PruneEvery},
	}
}

// retentionConfig is how long each kind of history is kept (0: forever).
func retentionConfig(cfg config.Config) commands.Retention {
	return commands.Retention{Events: cfg.EventRetention, Work: cfg.WorkRetention,
		WebhookAttempts: cfg.WebhookAttemptRetention}
}

// webhookConfig is the webhook service's share of the configuration.
func webhookConfig(cfg config.Config) webhook.Config {
	return webhook.Config{
		AllowPrivate: cfg.WebhookAllowPrivate, Timeout: cfg.WebhookTimeout,
		MaxEndpoints: cfg.WebhookMaxEndpoints, RecoverInterval: cfg.WebhookRecoverInterval,
		MaxInflightPerTenant: cfg.WebhookMaxInflightPerTenant, MaxInflightPerEndpoint: cfg.WebhookMaxInflightPerEndpoint,
		BreakerThreshold: cfg.WebhookBreakerThreshold, BreakerCooldown: cfg.WebhookBreakerCooldown,
		BreakerMaxCooldown: cfg.WebhookBreakerMaxCooldown, Concurrency: cfg.WebhookConcurrency,
	}
}

// apiRoutes lists the feature routes the API serves beyond httpapi's own,
// and the web console.
func apiRoutes(pool *pgxpool.Pool, s services, broker *eventstream.Broker) []httpapi.Routes {
	return append(httpapi.Features{
		Commands: s.handlers, Queries: s.queries,
		Broker: broker, EventReader: eventstream.NewReader(pool), Webhooks: s.webhooks,
		Streams: s.streams,
	}.Routes(), consoleRoutes)
}

// newWorkers builds the worker role's two work-queue pools, which share
// this process's shard leases (one owner, one membership among the worker
// processes, one share of the shards) and split the kinds: the
// reconcilers, and webhook delivery with a concurrency of its own. However
// many slow webhook endpoints a tenant has, they hold delivery slots only,
// never the ones that activate and expire reservations, sweep node
// liveness or dispatch node commands.
func newWorkers(pool *pgxpool.Pool, owner string, clk *clock.Clock, cfg config.Config, s services, logger *slog.Logger) (reconcilers, deliveries *workqueue.Worker) {
	reconcilers = workqueue.NewWorker(pool, owner, clk, logger.With("pool", "reconcilers"))
	reconcilers.Concurrency = cfg.WorkerConcurrency
	registerReconcilers(reconcilers, s)
	deliveries = workqueue.NewWorker(pool, owner, clk, logger.With("pool", "webhooks"))
	deliveries.ShareLeasesWith(reconcilers) // neither gives up a shard the other runs an item under
	deliveries.Concurrency = cfg.WebhookConcurrency
	deliveries.Handle(webhook.KindDeliver, s.webhooks.Deliver)
	deliveries.HandlePrefetch(webhook.KindDeliver, s.webhooks.Prefetch)
	if cfg.WebhookConcurrency <= cfg.WebhookMaxInflightPerTenant {
		logger.Warn("COMPUTE_WEBHOOK_CONCURRENCY is not above COMPUTE_WEBHOOK_MAX_INFLIGHT_PER_TENANT: one tenant's slow endpoints can fill this process's delivery pool",
			"webhook_concurrency", cfg.WebhookConcurrency, "max_inflight_per_tenant", cfg.WebhookMaxInflightPerTenant)
	}
	return reconcilers, deliveries
}

// registerReconcilers gives the reconciler worker a handler per kind:
// everything but webhook delivery, which has its pool (newWorkers).
func registerReconcilers(w *workqueue.Worker, s services) {
	// Every reconciler writes fenced by the shard lease of its item.
	for kind, handle := range s.handlers.Reconcilers().ByKind() {
		w.Handle(kind, handle)
	}
	w.Handle(commands.KindNodeJobDispatch, s.router.HandleDispatch)
	w.Handle(commands.KindRetentionPrune, s.pruner.HandleRetentionPrune)
}

// sinks lists the dispatchers of the durable outbox sinks the dispatcher
// role delivers, each sink under its own lease and cursor. The
// projections go in one group: one outbox read and one transaction per
// batch for the four of them. The webhook scheduler keeps a dispatcher of
// its own: in the group, every delivery waited for the four projections'
// work too (commit → delivery p50 61–101 ms under load, against 39–50
// alone). After a batch, wakeWorker (nil when this process runs no
// worker) wakes the delivery of the webhooks just scheduled and
// cursorsMoved (nil: nothing to wake) the API's minPosition waits in this
// process.
func sinks(pool *pgxpool.Pool, owner string, s services, wakeWorker, cursorsMoved func(), logger *slog.Logger) []*outbox.Dispatcher {
	hooks := outbox.NewTxDispatcher(pool, owner, s.webhooks.Scheduler(), logger)
	hooks.AfterBatch = wakeWorker
	var applied []outbox.TxSink
	for _, p := range projections.All() {
		applied = append(applied, p)
	}
	group := outbox.NewTxGroup(pool, owner, applied, logger)
	group.AfterBatch = cursorsMoved
	out := []*outbox.Dispatcher{hooks, group}
	if s.billing.URL != "" { // closed usage windows, at least once (docs/concepts/billing.md)
		b, err := billing.New(pool, s.billing, logger)
		if err != nil {
			logger.Error("billing sink not started", "err", err) // config.Load checked the settings
		} else {
			out = append(out, outbox.NewDispatcher(pool, owner, b, logger))
		}
	}
	return out
}

// billingMaxWait is how long the billing sink waits inside one delivery
// for a retry or the usage-windows projection before handing its batch
// back to the dispatcher, which logs it: about one log line a minute while
// the billing endpoint fails.
const billingMaxWait = time.Minute
