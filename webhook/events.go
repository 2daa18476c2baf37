package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
)

// Event types about webhook endpoints: core declares them in its event
// catalog (core.EventCatalog); these are the names this package uses.
const (
	EventEndpointCreated       = core.EventWebhookEndpointCreated
	EventEndpointUpdated       = core.EventWebhookEndpointUpdated
	EventEndpointDeleted       = core.EventWebhookEndpointDeleted
	EventEndpointSecretRotated = core.EventWebhookEndpointSecretRotated
	EventEndpointDisabled      = core.EventWebhookEndpointDisabled
	EventEndpointRecovered     = core.EventWebhookEndpointRecovered
)

// EndpointSubject names an endpoint in events.
func EndpointSubject(id string) string { return "webhook-endpoints/" + id }

// endpointEventData is the data of every webhook_endpoint.* event. It never
// carries the secret.
type endpointEventData struct {
	EndpointID     string     `json:"endpointId"`
	URL            string     `json:"url"`
	EventTypes     []string   `json:"eventTypes"`
	Enabled        bool       `json:"enabled"`
	DisabledReason string     `json:"disabledReason,omitempty"`
	Version        int64      `json:"version"`
	Since          *time.Time `json:"since,omitempty"`     // recovered only
	Scheduled      *int       `json:"scheduled,omitempty"` // recovered only
}

// appendEndpointEvent appends one webhook_endpoint.* event for row in the
// caller's transaction.
func appendEndpointEvent(ctx context.Context, q *db.Queries, typ string, row db.WebhookEndpoint, extra func(*endpointEventData)) (outbox.Position, error) {
	data := endpointEventData{
		EndpointID: row.ID, URL: row.Url, EventTypes: row.EventTypes, Enabled: row.Enabled, Version: row.Version,
	}
	if row.DisabledReason != nil {
		data.DisabledReason = *row.DisabledReason
	}
	if extra != nil {
		extra(&data)
	}
	ev, err := core.NewEvent(typ, row.TenantID, EndpointSubject(row.ID), data)
	if err != nil {
		return outbox.Position{}, fmt.Errorf("build %s event: %w", typ, err)
	}
	return outbox.Append(ctx, q, ev)
}

// disableEndpoint disables an enabled endpoint and appends
// webhook_endpoint.disabled; an endpoint already disabled is left alone, so
// the event is written once.
func disableEndpoint(ctx context.Context, q *db.Queries, id, reason string) error {
	row, err := q.WebhookEndpointDisable(ctx, db.WebhookEndpointDisableParams{ID: id, Reason: &reason})
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return fmt.Errorf("disable endpoint %s: %w", id, err)
	}
	if _, err := appendEndpointEvent(ctx, q, EventEndpointDisabled, row, nil); err != nil {
		return fmt.Errorf("disable endpoint %s: %w", id, err)
	}
	return nil
}
