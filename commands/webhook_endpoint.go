package commands

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// Helpers of the webhook endpoint commands (create, update, delete, disable
// and recover _webhook_endpoint.go). Package webhook validates the input
// (SSRF guard, filters), generates ids and secrets and calls these; the
// endpoint's state and its webhook_endpoint.* events are written only here.

// WebhookEndpointResult is an endpoint as a command left it, and the log
// position of the event the command appended.
type WebhookEndpointResult struct {
	Endpoint WebhookEndpoint
	Position outbox.Position
}

// WebhookEndpoint is an endpoint's state as a command wrote it (its
// secrets are not in it: package webhook made them and shows them once).
type WebhookEndpoint struct {
	ID, Tenant, URL, Description string
	EventTypes                   []string
	Enabled                      bool
	DisabledReason               string // "" while enabled
	FailingSince                 *time.Time
	ConsecutiveFailures          int32
	BreakerOpenUntil             *time.Time
	Version                      int64
	CreatedAt, UpdatedAt         time.Time
}

// webhookEndpointOf converts a row at the boundary: no generated type
// leaves the package.
func webhookEndpointOf(r db.WebhookEndpoint) WebhookEndpoint {
	e := WebhookEndpoint{ID: r.ID, Tenant: r.TenantID, URL: r.Url, Description: r.Description, EventTypes: r.EventTypes,
		Enabled: r.Enabled, FailingSince: r.FailingSince, ConsecutiveFailures: r.ConsecutiveFailures,
		BreakerOpenUntil: r.BreakerOpenUntil, Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.DisabledReason != nil {
		e.DisabledReason = *r.DisabledReason
	}
	return e
}

func requireWebhookWriter(actor core.Actor) error {
	if !actor.CanWrite() {
		return core.Errorf(core.CodePermissionDenied, "viewers may not change webhook endpoints")
	}
	return nil
}

// lockVisibleWebhookEndpoint loads and locks an endpoint the actor may see.
// Another tenant's endpoint is NOT_FOUND with the same message as a missing
// one, so its existence is never revealed.
func lockVisibleWebhookEndpoint(ctx context.Context, q *db.Queries, actor core.Actor, id string) (db.WebhookEndpoint, error) {
	row, err := q.WebhookEndpointGetForUpdate(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !actor.Sees(row.TenantID)) {
		return db.WebhookEndpoint{}, core.Errorf(core.CodeNotFound, "webhook endpoint %s not found", id)
	}
	if err != nil {
		return db.WebhookEndpoint{}, pg.Translate(err, "webhook endpoint")
	}
	return row, nil
}

// webhookEndpointEventData is the data of row's webhook_endpoint.* events.
func webhookEndpointEventData(row db.WebhookEndpoint) core.WebhookEndpointEventData {
	d := core.WebhookEndpointEventData{
		EndpointID: row.ID, URL: row.Url, EventTypes: row.EventTypes, Enabled: row.Enabled, Version: row.Version,
	}
	if d.EventTypes == nil {
		d.EventTypes = []string{}
	}
	if row.DisabledReason != nil {
		d.DisabledReason = *row.DisabledReason
	}
	return d
}

// appendWebhookEndpointEvent appends one webhook_endpoint.* event about row
// in the caller's transaction.
func appendWebhookEndpointEvent(ctx context.Context, q *db.Queries, typ string, row db.WebhookEndpoint, data any) (outbox.Position, error) {
	ev, err := core.NewEvent(typ, row.TenantID, core.WebhookEndpointSubject(row.ID), data)
	if err != nil {
		return outbox.Position{}, fmt.Errorf("build %s event: %w", typ, err)
	}
	return outbox.Append(ctx, q, ev)
}
