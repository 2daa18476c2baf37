package main

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/workqueue"
)

// newHandlers builds the capacity command handlers from the configuration.
func newHandlers(pool *pgxpool.Pool, cfg config.Config, logger *slog.Logger) *commands.Handlers {
	return &commands.Handlers{Pool: pool, Logger: logger, IdempotencyTTL: cfg.IdempotencyTTL}
}

// apiRoutes lists the feature routes the API serves beyond httpapi's own.
func apiRoutes(h *commands.Handlers) []httpapi.Routes {
	return nil
}

// registerReconcilers gives the work-queue worker a handler per kind.
func registerReconcilers(w *workqueue.Worker, h *commands.Handlers) {
	w.Handle(commands.KindReservationPlace, func(ctx context.Context, it workqueue.Item) error {
		return h.RetryPending(ctx, it.Key)
	})
	w.Handle(commands.KindReservationActivate, func(ctx context.Context, it workqueue.Item) error {
		return h.ActivateReservation(ctx, it.Key)
	})
	w.Handle(commands.KindReservationExpire, func(ctx context.Context, it workqueue.Item) error {
		return h.ExpireReservation(ctx, it.Key)
	})
}
