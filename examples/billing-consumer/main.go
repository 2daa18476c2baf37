// Command billing-consumer is a minimal, correct receiver of Better
// Compute's billing sink: it verifies each request with client.VerifyWebhook,
// deduplicates by the usage window's key cmp:<allocationId>:<windowStart>
// (the webhook-id header) in its own PostgreSQL table, and adds each window
// to its tenant's usage exactly once, in the same transaction that records
// the key.
//
// The sink delivers at least once: a retry after a lost response, or a
// dispatcher that crashed or lost its lease before saving its cursor, sends
// the same window again with the same key. Recording the key and counting
// the window in one transaction makes billing exactly once.
//
//	BILLING_SECRET=whsec_... DATABASE_URL=postgres://... go run ./examples/billing-consumer
package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	secret, dbURL := os.Getenv("BILLING_SECRET"), os.Getenv("DATABASE_URL")
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = ":9100"
	}
	if secret == "" || dbURL == "" {
		logger.Error("set BILLING_SECRET and DATABASE_URL")
		os.Exit(2)
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		logger.Error("connect", "err", err)
		os.Exit(1)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, schema); err != nil {
		logger.Error("create tables", "err", err)
		os.Exit(1)
	}
	http.Handle("POST /usage", &consumer{secret: secret, pool: pool, logger: logger, now: time.Now})
	srv := &http.Server{Addr: addr, ReadHeaderTimeout: 10 * time.Second}
	logger.Info("listening", "addr", addr)
	if err := srv.ListenAndServe(); err != nil {
		logger.Error("serve", "err", err)
		os.Exit(1)
	}
}
