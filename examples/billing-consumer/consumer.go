package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/client"
)

// schema is created at start: the inbox of keys already applied, and the
// effect, usage totals per tenant and GPU kind.
const schema = `
CREATE TABLE IF NOT EXISTS billing_inbox (
  key         text PRIMARY KEY,
  received_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS tenant_usage (
  tenant      text NOT NULL,
  gpu_kind    text NOT NULL,
  windows     bigint NOT NULL,
  reserved_ms bigint NOT NULL,
  device_ms   bigint NOT NULL,
  vcpu_ms     bigint NOT NULL,
  PRIMARY KEY (tenant, gpu_kind)
);`

// maxBody bounds what one request may make the consumer read.
const maxBody = 1 << 20

// window is the part of a usage window this consumer bills: the body of
// each request, the same JSON as an item of GET /v1/usage-windows.
type window struct {
	Key         string    `json:"key"`
	Tenant      string    `json:"tenant"`
	WindowStart time.Time `json:"windowStart"`
	ReservedMs  int64     `json:"reservedMs"`
	DeviceMs    int64     `json:"deviceMs"`
	VCPU        int64     `json:"vcpu"`
	GPUKind     string    `json:"gpuKind"`
}

// consumer receives closed usage windows from the billing sink.
type consumer struct {
	secret string
	pool   *pgxpool.Pool
	logger *slog.Logger
	// now is the clock signatures are checked against (time.Now; tests
	// pass the control plane's simulated clock).
	now func() time.Time
}

// ServeHTTP verifies the request, then applies the window once: a key
// already in the inbox is acknowledged (2xx) without being counted again.
// Anything but 2xx makes the sender retry, which is what we want while our
// database is down.
func (c *consumer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	// Verify before parsing: nothing unauthenticated is trusted.
	if err := client.VerifyWebhookAt(c.secret, r.Header, body, c.now()); err != nil {
		c.logger.Warn("rejected billing request", "err", err)
		http.Error(w, "invalid signature", http.StatusBadRequest)
		return
	}
	var win window
	if err := json.Unmarshal(body, &win); err != nil || win.Key == "" {
		http.Error(w, "malformed body", http.StatusBadRequest)
		return
	}
	// The key is signed as webhook-id; the body must name the same window.
	if key := r.Header.Get(client.WebhookHeaderID); key != win.Key {
		http.Error(w, "webhook-id is not the window's key", http.StatusBadRequest)
		return
	}
	applied, err := c.applyOnce(r.Context(), win)
	if err != nil {
		c.logger.Error("apply usage window", "key", win.Key, "err", err)
		http.Error(w, "try again", http.StatusInternalServerError)
		return
	}
	c.logger.Info("usage window", "key", win.Key, "tenant", win.Tenant, "duplicate", !applied)
	w.WriteHeader(http.StatusNoContent)
}

// applyOnce records the window's key and adds the window to its tenant's
// usage in one transaction. A key seen before inserts nothing and adds
// nothing: a redelivered window is not billed twice.
func (c *consumer) applyOnce(ctx context.Context, win window) (bool, error) {
	applied := false
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx,
			`INSERT INTO billing_inbox (key, received_at) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`,
			win.Key, time.Now())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return nil // seen before: already billed
		}
		applied = true
		_, err = tx.Exec(ctx, `
			INSERT INTO tenant_usage (tenant, gpu_kind, windows, reserved_ms, device_ms, vcpu_ms)
			VALUES ($1, $2, 1, $3, $4, $5)
			ON CONFLICT (tenant, gpu_kind) DO UPDATE
			   SET windows = tenant_usage.windows + 1, reserved_ms = tenant_usage.reserved_ms + EXCLUDED.reserved_ms,
			       device_ms = tenant_usage.device_ms + EXCLUDED.device_ms, vcpu_ms = tenant_usage.vcpu_ms + EXCLUDED.vcpu_ms`,
			win.Tenant, win.GPUKind, win.ReservedMs, win.DeviceMs, win.VCPU*win.ReservedMs)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("apply %s once: %w", win.Key, err)
	}
	return applied, nil
}
