package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
)

// frontierLagWarn is the outbox frontier lag past which /readyz reports
// degraded: some transaction is holding every event reader back.
const frontierLagWarn = 10 * time.Second

func serve(ctx context.Context, cfg config.Config, logger *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	demo := fs.Bool("demo", false, "seed a demo fleet and print an operator and a tenant token")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pool, closeDB, err := openDatabase(ctx, cfg, logger, "compute")
	if err != nil {
		return err
	}
	defer closeDB()

	owner := processOwner()
	logger = logger.With("owner", owner)
	clk := clock.New(logger)
	if _, err := clk.Sample(ctx, db.New(pool)); err != nil {
		return fmt.Errorf("sample compute_now(): %w", err)
	}
	handlers := newHandlers(pool, cfg, logger)
	if *demo {
		if err := seedDemo(ctx, handlers, &commands.Tokens{Pool: pool}, cfg.Addr, clk.Now(), logger); err != nil {
			return err
		}
	}

	var wg sync.WaitGroup
	goRun := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	runCtx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); wg.Wait() }()

	if cfg.Has("worker") {
		w := workqueue.NewWorker(pool, owner, clk, logger)
		registerReconcilers(w, handlers)
		goRun(func() { w.Run(runCtx, cfg.PollInterval, nil) })
	}
	if !cfg.Has("api") {
		<-ctx.Done()
		return nil
	}

	auth := authn.New(pool, cfg.TokenCacheTTL)
	goRun(func() {
		auth.Run(runCtx, cfg.PollInterval, func(err error) { logger.Warn("authz feed", "err", err) })
	})
	e := httpapi.New(httpapi.Deps{
		Pool: pool, Clock: clk, Auth: auth, Logger: logger, BodyLimit: cfg.BodyLimit,
		ReadyChecks: []httpapi.ReadyCheck{frontierCheck(pool)},
	}, apiRoutes(handlers)...)
	srv := &http.Server{Addr: cfg.Addr, Handler: e, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
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

// frontierCheck reports the outbox frontier lag in /readyz: a transaction
// held open holds every event reader back, cluster-wide.
func frontierCheck(pool *pgxpool.Pool) httpapi.ReadyCheck {
	return httpapi.ReadyCheck{Name: "outbox.frontier", Run: func(ctx context.Context) httpapi.CheckResult {
		lag, err := outbox.ReadFrontierLag(ctx, db.New(pool), time.Now)
		if err != nil {
			return httpapi.CheckResult{Status: httpapi.CheckDegraded, Message: err.Error()}
		}
		secs := lag.Age.Seconds()
		res := httpapi.CheckResult{Status: httpapi.CheckOK, Seconds: &secs}
		if lag.Age > frontierLagWarn {
			res.Status, res.Message = httpapi.CheckDegraded, "held back by "+lag.Holder
		}
		return res
	}}
}

// processOwner names this process in leases and claims: unique per start,
// so a restarted process never inherits its predecessor's leases by name.
func processOwner() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}
