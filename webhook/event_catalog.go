package webhook

// EventTypes returns every webhook_endpoint.* event type, in a fixed order.
// docs/openapi.yaml documents each one's data; a test in httpapi fails when
// a type is added without being documented there.
func EventTypes() []string {
	return []string{
		EventEndpointCreated,
		EventEndpointUpdated,
		EventEndpointDeleted,
		EventEndpointSecretRotated,
		EventEndpointDisabled,
		EventEndpointRecovered,
	}
}
