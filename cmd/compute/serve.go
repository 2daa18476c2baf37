package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/queries"
)

// probePoolSize is the size of the pool of /readyz and the domain metrics:
// their reads are a few milliseconds, under a 2 s bound, and the domain
// read is cached for 5 s, so two connections serve any number of probes.
const probePoolSize = 2

func serve(ctx context.Context, cfg config.Config, logger *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	demo := fs.Bool("demo", false, "seed a demo fleet, run its nodes' daemons in this process, and print an operator and a tenant token")
	if err := fs.Parse(args); err != nil {
		return badFlags{err}
	}
	pool, url, closeDB, err := openDatabase(ctx, cfg, logger, "compute")
	if err != nil {
		return err
	}
	defer closeDB()

	owner := processOwner()
	logger = logger.With("owner", owner)
	clk := clock.New(logger)
	if _, err := clk.Sample(ctx, queries.New(pool)); err != nil {
		return fmt.Errorf("sample compute_now(): %w", err)
	}
	// /readyz's checks and the domain metrics get a pool of their own (a
	// bulkhead of probePoolSize): commands or background work holding
	// every connection of the other pools must not make a healthy
	// database look unreachable to the load balancer (503 on every
	// replica at once), nor blank the fleet's metrics.
	probePool, err := pg.Connect(ctx, url, pg.PoolOptions{
		MaxConns: probePoolSize, IdleInTxTimeout: cfg.IdleInTxTimeout,
		PgBouncer: cfg.PgBouncer, ApplicationName: "compute-probes",
	})
	if err != nil {
		return fmt.Errorf("probe pool: %w", err)
	}
	defer closePool(probePool)
	obs, err := newObservability(ctx, cfg, probePool, owner, logger)
	if err != nil {
		return err
	}
	defer obs.close(logger) // after the loops below have stopped
	svc := newServices(pool, cfg, logger, obs.placementRejected())
	if cfg.Has("api") {
		// The API's queries get a pool of their own (a bulkhead, as the
		// background roles' below): a read, a read-your-writes wait
		// included, never queues for a connection behind the commands.
		readPool, err := pg.Connect(ctx, url, pg.PoolOptions{
			MaxConns: cfg.ReadMaxConns, IdleInTxTimeout: cfg.IdleInTxTimeout,
			PgBouncer: cfg.PgBouncer, ApplicationName: "compute",
		})
		if err != nil {
			return fmt.Errorf("read pool: %w", err)
		}
		defer closePool(readPool)
		svc.queries.Pool = readPool
	}
	if cfg.WebhookAllowPrivate {
		// Said once here, not by each webhook service: a process with the
		// api role and background roles builds one per pool.
		logger.Warn("webhook SSRF guard is off: deliveries may reach loopback, private and metadata addresses (COMPUTE_WEBHOOK_ALLOW_PRIVATE=true)")
	}
	if cfg.NodesWithoutDaemons {
		logger.Warn("COMPUTE_NODES_WITHOUT_DAEMONS: nodes registered here that never join stay schedulable (benchmarks and tests only)")
	}
	// The background roles get a pool of their own when the API shares the
	// process (a bulkhead): under API overload, requests queue for the
	// API's connections while delivery, projections and node sessions keep
	// theirs. Measured by compute bench's pipeline run: with one shared
	// pool, webhooks were delivered at a third of the rate events arrived.
	bgPool, bg := pool, svc
	if cfg.Has("api") && (cfg.Has("worker") || cfg.Has("dispatcher") || cfg.Has("gateway")) {
		bgPool, err = pg.Connect(ctx, url, pg.PoolOptions{
			MaxConns: cfg.BackgroundMaxConns, IdleInTxTimeout: cfg.IdleInTxTimeout,
			PgBouncer: cfg.PgBouncer, ApplicationName: "compute",
		})
		if err != nil {
			return fmt.Errorf("background pool: %w", err)
		}
		defer closePool(bgPool)
		bg = newServices(bgPool, cfg, logger, obs.placementRejected())
	}
	// The ports are bound before anything is done that counts on them: a
	// taken one stops the process before a demo is seeded, a token printed
	// or a daemon started. Each error names the setting that moves it.
	var apiListeners httpapi.Listeners
	if cfg.Has("api") {
		if apiListeners, err = httpapi.Listen(cfg.Addr, cfg.MetricsAddr); err != nil {
			if cfg.MetricsAddr != "" {
				return fmt.Errorf("http server (COMPUTE_ADDR, COMPUTE_METRICS_ADDR): %w", err)
			}
			return fmt.Errorf("http server (COMPUTE_ADDR): %w", err)
		}
		defer apiListeners.Close()
	}
	var gatewayListener net.Listener
	if cfg.Has("gateway") {
		if gatewayListener, err = net.Listen("tcp", cfg.GatewayAddr); err != nil {
			return fmt.Errorf("gateway listen (COMPUTE_GATEWAY_ADDR): %w", err)
		}
		defer gatewayListener.Close()
	}
	// The demo's state lives next to the private cluster's (.compute/demo).
	demoAt := demoEndpoints{Addr: cfg.Addr, GatewayAddr: cfg.GatewayAddr, Dir: filepath.Join(filepath.Dir(cfg.PGDir), "demo")}
	var fleet demoFleet
	if *demo {
		if fleet, err = seedDemo(ctx, svc.handlers, svc.handlers.Tokens(), demoAt, clk.Now(), os.Stdout, logger); err != nil {
			return err
		}
	}
	if cfg.Has("api") { // the first start prints an operator token (bootstrap.go)
		if err := printBootstrapToken(ctx, pool, cfg.Addr, os.Stdout, logger); err != nil {
			return err
		}
	}

	var wg sync.WaitGroup
	goRun := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	runCtx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); wg.Wait() }()
	// Every role re-anchors the clock, not only the worker at its lease
	// renewals: an API-only or gateway-only process would drift.
	goRun(func() { clk.Run(runCtx, queries.New(pool), clock.AnchorEvery) })

	// Pokes wake loops early when an event is appended; every loop also
	// polls, so a lost poke (or no listener at all) only delays.
	// Appends are announced after they commit, by the notifier of the pool
	// that committed them (every pool has one: other processes listen);
	// this process's own loops are poked at once, in process.
	var listener *outbox.Listener
	if listenURL := pickListenURL(cfg, url); listenURL != "" {
		listener = outbox.NewListener(listenURL, logger)
		goRun(func() { listener.Run(runCtx) })
	}
	outbox.InstallNotifier(pool, listener, logger)
	if bgPool != pool {
		outbox.InstallNotifier(bgPool, listener, logger)
	}
	pokes := func() <-chan struct{} {
		if listener == nil {
			return nil
		}
		return listener.Subscribe()
	}

	// The delivery pool of a worker in this process is woken when this
	// process's webhook sink enqueued deliveries; a worker elsewhere finds
	// them at its next poll.
	var wakeWorker func()
	if cfg.Has("worker") {
		reconcilers, deliveries := newWorkers(bgPool, owner, clk, cfg, bg, logger)
		obs.worker(reconcilers)
		obs.worker(deliveries)
		// The liveness sweep, the reservation resync and the fair-share
		// fold re-enqueue themselves; seeding them is idempotent.
		if err := bg.handlers.EnsureNodeLivenessSweep(ctx); err != nil {
			return fmt.Errorf("seed liveness sweep: %w", err)
		}
		if err := bg.handlers.EnsureReservationResync(ctx); err != nil {
			return fmt.Errorf("seed reservation resync: %w", err)
		}
		if err := bg.handlers.EnsureFairShareFold(ctx); err != nil {
			return fmt.Errorf("seed fair-share fold: %w", err)
		}
		if err := bg.pruner.EnsureRetentionPrune(ctx); err != nil {
			return fmt.Errorf("seed retention pruner: %w", err)
		}
		wake := make(chan struct{}, 1)
		wakeWorker = func() {
			select {
			case wake <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
		goRun(func() { reconcilers.Run(runCtx, cfg.PollInterval, nil) })
		goRun(func() { deliveries.Run(runCtx, cfg.PollInterval, wake) })
	}
	if cfg.Has("gateway") {
		gatewayCtx := runCtx
		if *demo {
			// The demo's daemons stop gracefully when the process does, and
			// report the workloads they stopped: the gateway outlives the
			// signal until they are done (see below).
			var stopGateway context.CancelFunc
			gatewayCtx, stopGateway = context.WithCancel(context.WithoutCancel(runCtx))
			defer stopGateway()
		}
		stop := startGateway(gatewayCtx, cfg, gatewayListener, owner, bg, obs, logger, goRun)
		defer stop()
	}
	if *demo { // after the gateway: they connect to it
		// The daemons stop first, while the gateway still serves them, so
		// that each reports the workloads its graceful stop ended: deferred
		// after the gateway's stop, this runs before it.
		demoCtx, stopDemo := context.WithCancel(runCtx)
		var daemons sync.WaitGroup
		defer func() { stopDemo(); daemons.Wait() }()
		if err := runDemoDaemons(demoCtx, bg.handlers, fleet, demoAt, logger, daemons.Go); err != nil {
			return err
		}
	}
	checks := readyChecks(cfg, probePool, clk)
	if cfg.ReadDatabaseURL != "" && cfg.Has("api") { // read models from a hot standby
		check, err := startReadReplica(runCtx, cfg, svc.queries, obs.registry, logger, goRun)
		if err != nil {
			return err
		}
		checks = append(checks, check)
	}
	if cfg.Has("dispatcher") {
		for _, d := range sinks(bgPool, owner, bg, wakeWorker, svc.queries.CursorsMoved, logger) {
			obs.dispatcher(d)
			p := pokes()
			goRun(func() { d.Run(runCtx, cfg.PollInterval, p) })
		}
		if nc, ok := jetStreamConfig(cfg, owner); ok { // every event to NATS JetStream, through the Router
			check, err := startJetStream(runCtx, nc, bgPool, owner, obs, cfg.PollInterval, pokes(), logger, goRun)
			if err != nil {
				return err
			}
			checks = append(checks, check)
		}
	}
	if !cfg.Has("api") {
		if cfg.MetricsAddr != "" {
			stop := serveProbes(cfg, probePool, clk, obs.registry, checks, logger)
			defer stop()
		}
		logger.Info("running", "roles", cfg.Roles)
		<-ctx.Done()
		return nil
	}

	auth := authn.New(pool, cfg.TokenCacheTTL)
	goRun(func() { auth.Run(runCtx, cfg.PollInterval, logger) })
	broker, runBroker, streamCheck, err := streamBroker(cfg, pool, svc.queries.Replica, owner, logger, cfg.PollInterval, pokes) // COMPUTE_STREAM_SOURCE
	if err != nil {
		return err
	}
	if streamCheck != nil {
		checks = append(checks, *streamCheck)
	}
	goRun(func() { runBroker(runCtx) })

	e := httpapi.New(httpapi.Deps{
		Pool: pool, ProbePool: probePool, Commands: svc.handlers, Clock: clk, Auth: auth, Logger: logger, BodyLimit: cfg.BodyLimit,
		CommandTimeout: cfg.CommandTimeout,
		Admission:      commandAdmission(runCtx, cfg, svc.queries, logger, goRun),
		ReadyChecks:    checks,
		CORSOrigins:    cfg.CORSOrigins, RateLimit: cfg.RateLimit, RateBurst: cfg.RateBurst,
		ClientAddresses: clientAddresses(cfg),
		Registry:        obs.registry, TracerProvider: obs.tp,
	}, apiRoutes(pool, svc, broker)...)
	srv := apiServer(cfg, e, logger)
	// Shutdown waits for handlers; open event streams end only when the
	// broker closes them.
	srv.RegisterOnShutdown(broker.Close)
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeListeners(apiListeners) }()
	logger.Info("serving", "addr", cfg.Addr, "roles", cfg.Roles)

	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, done := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer done()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http shutdown: %w", err)
	}
	return nil
}

// serveProbes serves /healthz, /readyz (database, clock.skew and checks)
// and /metrics on cfg.MetricsAddr for a process without the api role,
// whose API listener would otherwise carry them. The returned function
// stops it.
func serveProbes(cfg config.Config, pool *pgxpool.Pool, clk *clock.Clock, reg *prometheus.Registry, checks []httpapi.ReadyCheck, logger *slog.Logger) func() {
	limits := listenerLimits(cfg)
	limits.MaxConns = 64 // scrapers and probes
	srv := httpapi.NewServer(cfg.MetricsAddr, httpapi.Probes(httpapi.Deps{
		Pool: pool, Clock: clk, Logger: logger, ReadyChecks: checks, Registry: reg,
	}), limits)
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics and readiness listener", "err", err)
		}
	}()
	logger.Info("metrics and readiness on the internal listener", "addr", cfg.MetricsAddr)
	return func() { _ = srv.Close() }
}

// startGateway serves node daemons on ln (cfg.GatewayAddr) under the gateway's
// lease. The returned function stops accepting daemons.
func startGateway(ctx context.Context, cfg config.Config, ln net.Listener, owner string, svc services, obs observability,
	logger *slog.Logger, goRun func(func())) func() {
	id := cfg.GatewayID
	if id == "" {
		id, _ = os.Hostname()
	}
	gw := &gateway.Gateway{ID: id, Owner: owner, Commands: svc.handlers, Logger: logger, ClientAddresses: clientAddresses(cfg)}
	obs.gateway(gw)
	svc.router.Register(gw)
	takeFirstLease(ctx, gw, logger)
	goRun(func() { gw.Run(ctx) })
	srv := gatewayServer(cfg, gw)
	goRun(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("gateway server", "err", err)
		}
	})
	logger.Info("gateway serving daemons", "addr", cfg.GatewayAddr, "gateway", id)
	return func() { _ = srv.Close() }
}

// firstLeaseWait bounds how long the start waits for its first try at the
// gateway's lease (one statement): a slow database delays the start by no
// more than this.
const firstLeaseWait = 5 * time.Second

// takeFirstLease takes the gateway's lease once before any daemon is served.
// After a graceful stop the predecessor has released it, and the daemons'
// first dials are welcomed: served while Run was still taking it, they were
// answered 503 "gateway does not hold its lease" and came back a second
// later. A lease that a crashed predecessor still holds is refused at once,
// not waited for: the gateway serves anyway, answers 503 until the lease
// lapses, and Run's takeOver takes it within a second of the lapse.
func takeFirstLease(ctx context.Context, gw *gateway.Gateway, logger *slog.Logger) {
	tctx, cancel := context.WithTimeout(ctx, firstLeaseWait)
	defer cancel()
	switch err := gw.Renew(tctx); {
	case errors.Is(err, lease.ErrNotAcquired):
		logger.Info("gateway lease still held by a previous process: daemons are answered 503 until it lapses",
			"gateway", gw.ID, "lease_ttl", lease.GatewayTTL)
	case err != nil:
		logger.Warn("gateway lease", "gateway", gw.ID, "err", err)
	}
}

// pickListenURL is where LISTEN connects: COMPUTE_LISTEN_URL, or the
// database itself unless PgBouncer (which cannot LISTEN) is in front.
func pickListenURL(cfg config.Config, dbURL string) string {
	switch {
	case cfg.ListenURL == "off":
		return ""
	case cfg.ListenURL != "":
		return cfg.ListenURL
	case cfg.PgBouncer:
		return ""
	}
	return dbURL
}

// processOwner names this process in leases and claims: unique per start,
// so a restarted process never inherits its predecessor's leases by name.
func processOwner() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// clientAddresses is whose address a failed authentication counts
// against: config.Load checked COMPUTE_TRUSTED_PROXIES already.
func clientAddresses(cfg config.Config) authn.ClientAddresses {
	a, _ := authn.NewClientAddresses(cfg.TrustedProxies)
	return a
}
