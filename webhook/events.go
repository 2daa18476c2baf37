package webhook

import (
	"github.com/bettercompute/compute/core"
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
func EndpointSubject(id string) string { return core.WebhookEndpointSubject(id) }

// The webhook_endpoint.* events, with their data (core.WebhookEndpointEventData),
// are appended by the endpoint commands in package commands: this package
// validates the input, generates ids and secrets, and calls them.
