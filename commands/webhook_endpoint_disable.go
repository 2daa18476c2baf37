package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// DisableWebhookEndpoint is what webhook deliveries do to an endpoint that
// answered 410 Gone or failed for too long: it disables the endpoint with
// reason ("gone" or "failing") and appends webhook_endpoint.disabled, in the
// caller's transaction q (the deliverer's, fenced by its work item's lease,
// which also records the attempt). An endpoint already disabled, or gone, is
// left alone, so the event is written once.
func DisableWebhookEndpoint(ctx context.Context, q *db.Queries, id, reason string) error {
	row, err := q.WebhookEndpointDisable(ctx, db.WebhookEndpointDisableParams{ID: id, Reason: &reason})
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return fmt.Errorf("disable webhook endpoint %s: %w", id, err)
	}
	if _, err := appendWebhookEndpointEvent(ctx, q, core.EventWebhookEndpointDisabled, row, webhookEndpointEventData(row)); err != nil {
		return fmt.Errorf("disable webhook endpoint %s: %w", id, err)
	}
	return nil
}
