package commands

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// DeleteWebhookEndpoint removes an endpoint with its deliveries and attempts
// (the foreign keys cascade) and appends webhook_endpoint.deleted; queued
// delivery items find nothing and complete. The result is the endpoint as
// it was.
func (h *Handlers) DeleteWebhookEndpoint(ctx context.Context, actor core.Actor, id string) (WebhookEndpointResult, error) {
	if err := requireWebhookWriter(actor); err != nil {
		return WebhookEndpointResult{}, err
	}
	var out WebhookEndpointResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		row, err := lockVisibleWebhookEndpoint(ctx, q, actor, id)
		if err != nil {
			return err
		}
		if _, err := q.WebhookEndpointDelete(ctx, id); err != nil {
			return pg.Translate(err, "webhook endpoint")
		}
		out.Endpoint = webhookEndpointOf(row)
		out.Position, err = appendWebhookEndpointEvent(ctx, q, core.EventWebhookEndpointDeleted, row, webhookEndpointEventData(row))
		return err
	})
	if err != nil {
		return WebhookEndpointResult{}, fmt.Errorf("delete webhook endpoint %s: %w", id, err)
	}
	return out, nil
}
