package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// CreateWebhookEndpoint registers a webhook endpoint. The caller (package
// webhook) has validated URL, EventTypes and Description and generated ID
// and Secret.
type CreateWebhookEndpoint struct {
	ID          string
	Tenant      string
	URL         string
	EventTypes  []string
	Description string
	Secret      string
	// MaxEndpoints caps the tenant's endpoints, enabled or not.
	MaxEndpoints int
}

// CreateWebhookEndpoint inserts the endpoint, guarded by the tenant's
// endpoint cap (QUOTA_EXCEEDED beyond it), and appends
// webhook_endpoint.created.
func (h *Handlers) CreateWebhookEndpoint(ctx context.Context, actor core.Actor, cmd CreateWebhookEndpoint) (WebhookEndpointResult, error) {
	if err := requireWebhookWriter(actor); err != nil {
		return WebhookEndpointResult{}, err
	}
	if cmd.Tenant != actor.Tenant && !actor.IsOperator() {
		return WebhookEndpointResult{}, core.Errorf(core.CodePermissionDenied, "only operators may create endpoints for another tenant")
	}
	var out WebhookEndpointResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		if err := q.TenantEnsure(ctx, cmd.Tenant); err != nil {
			return pg.Translate(err, "tenant "+cmd.Tenant)
		}
		// The cap is the guarded insert's; the tenant lock makes its
		// count exact against concurrent creates.
		if err := q.TenantLock(ctx, cmd.Tenant); err != nil {
			return pg.Translate(err, "tenant "+cmd.Tenant)
		}
		row, err := q.WebhookEndpointCreate(ctx, db.WebhookEndpointCreateParams{
			ID: cmd.ID, TenantID: cmd.Tenant, Url: cmd.URL, EventTypes: cmd.EventTypes,
			Description: cmd.Description, Secret: cmd.Secret, MaxEndpoints: int32(cmd.MaxEndpoints),
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return core.Errorf(core.CodeQuotaExceeded,
				"tenant %s has %d webhook endpoints, the most allowed: delete one before registering another",
				cmd.Tenant, cmd.MaxEndpoints)
		}
		if err != nil {
			return pg.Translate(err, "webhook endpoint")
		}
		out.Endpoint = webhookEndpointOf(row)
		out.Position, err = appendWebhookEndpointEvent(ctx, q, core.EventWebhookEndpointCreated, row, webhookEndpointEventData(row))
		return err
	})
	if err != nil {
		return WebhookEndpointResult{}, fmt.Errorf("create webhook endpoint for %s: %w", cmd.Tenant, err)
	}
	return out, nil
}
