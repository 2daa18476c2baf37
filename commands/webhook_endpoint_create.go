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
	// IdempotencyKey, when set, makes a retry of the same request answer
	// what the first one did, its secret included, instead of registering
	// a second endpoint (the first's ID and Secret are kept; the retry's
	// are not used).
	IdempotencyKey string
}

// CreatedWebhookEndpoint is a created endpoint with the secret it signs
// with, which its creator sees once (and a retry with the same
// Idempotency-Key again: the stored answer holds it, as the endpoint's
// row does).
type CreatedWebhookEndpoint struct {
	WebhookEndpointResult
	Secret string
}

// webhookEndpointRequest is what a create's Idempotency-Key stands for: the
// request as the client sent it, without the ID and secret made for it.
type webhookEndpointRequest struct {
	Tenant, URL, Description string
	EventTypes               []string
}

// CreateWebhookEndpoint inserts the endpoint, guarded by the tenant's
// endpoint cap (QUOTA_EXCEEDED beyond it), and appends
// webhook_endpoint.created.
func (h *Handlers) CreateWebhookEndpoint(ctx context.Context, actor core.Actor, cmd CreateWebhookEndpoint) (CreatedWebhookEndpoint, error) {
	if err := requireWebhookWriter(actor); err != nil {
		return CreatedWebhookEndpoint{}, err
	}
	if cmd.Tenant != actor.Tenant && !actor.IsOperator() {
		return CreatedWebhookEndpoint{}, core.Errorf(core.CodePermissionDenied, "only operators may create endpoints for another tenant")
	}
	req := webhookEndpointRequest{Tenant: cmd.Tenant, URL: cmd.URL, Description: cmd.Description, EventTypes: cmd.EventTypes}
	if !tokenTenantPattern.MatchString(cmd.Tenant) {
		// The rule tokens.create applies: a tenant id no token could carry.
		return CreatedWebhookEndpoint{}, keyReusedFirst(ctx, h, actor, cmd.IdempotencyKey, "webhook-endpoints.create", req,
			core.Errorf(core.CodeInvalidArgument,
				"tenant %q is invalid: use 1 to 63 lower-case letters, digits or '-', starting with a letter or digit", cmd.Tenant))
	}
	out, err := idempotent(ctx, h, actor, cmd.IdempotencyKey, "webhook-endpoints.create", req,
		func(ctx context.Context, tx pgx.Tx) (CreatedWebhookEndpoint, error) {
			return createWebhookEndpoint(ctx, db.New(tx), cmd, cmd.Tenant != actor.Tenant)
		})
	if err != nil {
		return CreatedWebhookEndpoint{}, fmt.Errorf("create webhook endpoint for %s: %w", cmd.Tenant, err)
	}
	return out, nil
}

// createWebhookEndpoint is the create's transaction. A tenant the caller
// names (an operator's, for another tenant) must exist, NOT_FOUND
// otherwise, as for quotas: a typo that minted a tenant would give an
// endpoint no event ever reaches, answered 201. Tenants are created by
// issuing them a token; the caller's own tenant exists by its token.
func createWebhookEndpoint(ctx context.Context, q *db.Queries, cmd CreateWebhookEndpoint, named bool) (CreatedWebhookEndpoint, error) {
	if named {
		if _, err := q.TenantGet(ctx, cmd.Tenant); errors.Is(err, pgx.ErrNoRows) {
			return CreatedWebhookEndpoint{}, unknownTenant(cmd.Tenant)
		} else if err != nil {
			return CreatedWebhookEndpoint{}, pg.Translate(err, "tenant "+cmd.Tenant)
		}
	} else if err := q.TenantEnsure(ctx, cmd.Tenant); err != nil {
		return CreatedWebhookEndpoint{}, pg.Translate(err, "tenant "+cmd.Tenant)
	}
	// The cap is the guarded insert's; the tenant lock makes its count
	// exact against concurrent creates.
	if err := q.TenantLock(ctx, cmd.Tenant); err != nil {
		return CreatedWebhookEndpoint{}, pg.Translate(err, "tenant "+cmd.Tenant)
	}
	row, err := q.WebhookEndpointCreate(ctx, db.WebhookEndpointCreateParams{
		ID: cmd.ID, TenantID: cmd.Tenant, Url: cmd.URL, EventTypes: cmd.EventTypes,
		Description: cmd.Description, Secret: cmd.Secret, MaxEndpoints: int32(cmd.MaxEndpoints),
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return CreatedWebhookEndpoint{}, core.Errorf(core.CodeQuotaExceeded,
			"tenant %s has %d webhook endpoints, the most allowed: delete one before registering another",
			cmd.Tenant, cmd.MaxEndpoints)
	}
	if err != nil {
		return CreatedWebhookEndpoint{}, pg.Translate(err, "webhook endpoint")
	}
	out := CreatedWebhookEndpoint{Secret: cmd.Secret}
	out.Endpoint = webhookEndpointOf(row)
	out.Position, err = appendWebhookEndpointEvent(ctx, q, core.EventWebhookEndpointCreated, row, webhookEndpointEventData(row))
	return out, err
}
