// Command webhook-consumer is a minimal, correct receiver of Better Compute
// webhooks: it verifies each request with client.VerifyWebhook, deduplicates by
// the webhook-id header in its own PostgreSQL table, and applies each event
// exactly once, in the same transaction that records the id.
//
// Deliveries are at least once: a retry after a lost response, a recover,
// or a dispatcher that lost its lease sends the same event again with the
// same webhook-id. Recording the id and applying the event in one
// transaction makes the effect exactly once.
//
//	WEBHOOK_SECRET=whsec_... DATABASE_URL=postgres://... go run ./examples/webhook-consumer
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/client"
)

// schema is created at start. Times are written from Go: this example
// keeps no business logic in SQL.
const schema = `
CREATE TABLE IF NOT EXISTS webhook_inbox (
  webhook_id  text PRIMARY KEY,
  event_type  text NOT NULL,
  received_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS event_type_counts (
  event_type text PRIMARY KEY,
  n          bigint NOT NULL
);`

// maxBody bounds what one request may make the consumer read.
const maxBody = 1 << 20

// event is the part of the envelope this consumer uses.
type event struct {
	ID   string          `json:"id"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	secret, dbURL := os.Getenv("WEBHOOK_SECRET"), os.Getenv("DATABASE_URL")
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = ":9000"
	}
	if secret == "" || dbURL == "" {
		logger.Error("set WEBHOOK_SECRET and DATABASE_URL")
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
	http.Handle("POST /webhooks", &receiver{secret: secret, pool: pool, logger: logger})
	srv := &http.Server{Addr: addr, ReadHeaderTimeout: 10 * time.Second}
	logger.Info("listening", "addr", addr)
	if err := srv.ListenAndServe(); err != nil {
		logger.Error("serve", "err", err)
		os.Exit(1)
	}
}

type receiver struct {
	secret string
	pool   *pgxpool.Pool
	logger *slog.Logger
}

// ServeHTTP answers 2xx only once the event is durably applied (or was
// already): any other answer makes the sender retry, which is what we want
// when our database is down.
func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	// Verify before parsing: nothing unauthenticated is trusted.
	if err := client.VerifyWebhook(rc.secret, r.Header, body); err != nil {
		rc.logger.Warn("rejected webhook", "err", err)
		http.Error(w, "invalid signature", http.StatusBadRequest)
		return
	}
	var ev event
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, "malformed body", http.StatusBadRequest)
		return
	}
	id := r.Header.Get(client.WebhookHeaderID)
	applied, err := rc.applyOnce(r.Context(), id, ev)
	if err != nil {
		rc.logger.Error("apply webhook", "webhook_id", id, "err", err)
		http.Error(w, "try again", http.StatusInternalServerError)
		return
	}
	rc.logger.Info("webhook", "webhook_id", id, "type", ev.Type, "duplicate", !applied)
	w.WriteHeader(http.StatusNoContent)
}

// applyOnce records id and applies ev in one transaction. A duplicate
// inserts nothing into the inbox and skips the effect.
func (rc *receiver) applyOnce(ctx context.Context, id string, ev event) (bool, error) {
	applied := false
	err := pgx.BeginFunc(ctx, rc.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx,
			`INSERT INTO webhook_inbox (webhook_id, event_type, received_at) VALUES ($1, $2, $3)
			 ON CONFLICT (webhook_id) DO NOTHING`, id, ev.Type, time.Now())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return nil // seen before: already applied
		}
		applied = true
		// The effect: here a count per event type; a real consumer updates
		// its own state from ev.Data.
		_, err = tx.Exec(ctx,
			`INSERT INTO event_type_counts (event_type, n) VALUES ($1, 1)
			 ON CONFLICT (event_type) DO UPDATE SET n = event_type_counts.n + 1`, ev.Type)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("apply %s once: %w", id, err)
	}
	return applied, nil
}
