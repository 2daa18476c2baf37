package core

// Event types about webhook endpoints (written by package webhook). They go
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
