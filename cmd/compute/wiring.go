package main

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/workqueue"
)

// apiRoutes lists the feature routes the API serves beyond httpapi's own.
func apiRoutes(pool *pgxpool.Pool, cfg config.Config) []httpapi.Routes {
	return nil
}

// registerReconcilers gives the work-queue worker a handler per kind.
func registerReconcilers(w *workqueue.Worker, pool *pgxpool.Pool, cfg config.Config, logger *slog.Logger) {
}

// seedDemo seeds a demo fleet and prints tokens.
func seedDemo(ctx context.Context, pool *pgxpool.Pool, cfg config.Config, logger *slog.Logger) error {
	return nil
}
