package core

import "time"

// Event types about webhook endpoints (written by package commands, for package webhook). They go
// to the endpoint's tenant like any other tenant event, so an SSE client or
// another endpoint learns that one was disabled. Their data is the endpoint
// after the change, never its secret.
const (
	EventWebhookEndpointCreated       = "webhook_endpoint.created"
	EventWebhookEndpointUpdated       = "webhook_endpoint.updated"
	EventWebhookEndpointDeleted       = "webhook_endpoint.deleted"
	EventWebhookEndpointSecretRotated = "webhook_endpoint.secret_rotated"
	// EventWebhookEndpointDisabled: deliveries disabled the endpoint (410
	// Gone, or failing for too long).
	EventWebhookEndpointDisabled = "webhook_endpoint.disabled"
	// EventWebhookEndpointRecovered: undelivered events were scheduled
	// again; the data adds since and scheduled.
	EventWebhookEndpointRecovered = "webhook_endpoint.recovered"
)

// WebhookEndpointSubject names an endpoint in events.
func WebhookEndpointSubject(id string) string { return "webhook-endpoints/" + id }

// WebhookEndpointEventData is the data of every webhook_endpoint.* event
// but recovered: the endpoint after the change, never its secret.
type WebhookEndpointEventData struct {
	EndpointID string `json:"endpointId"`
	URL        string `json:"url"`
	// EventTypes is the filter; empty means every type.
	EventTypes []string `json:"eventTypes"`
	Enabled    bool     `json:"enabled"`
	// DisabledReason is set only while disabled: manual, gone or failing.
	DisabledReason string `json:"disabledReason,omitempty"`
	Version        int64  `json:"version"`
}

// WebhookEndpointRecoveredEventData is the data of
// webhook_endpoint.recovered: the endpoint, and what the recover scheduled.
type WebhookEndpointRecoveredEventData struct {
	WebhookEndpointEventData
	// Since is the time from which events were considered.
	Since time.Time `json:"since"`
	// Scheduled counts the deliveries scheduled.
	Scheduled int `json:"scheduled"`
}
