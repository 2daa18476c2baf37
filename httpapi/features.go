package httpapi

import (
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/queries"
	"github.com/bettercompute/compute/webhook"
)

// Features are the services behind the feature routes. main and the
// route/spec agreement test both build the API from this one list, so the
// test checks exactly what the server serves.
type Features struct {
	Commands    *commands.Handlers
	Queries     *queries.Service
	Broker      *eventstream.Broker
	EventReader *eventstream.Reader
	Webhooks    *webhook.Service
	// Streams bound the event streams (zero values: the defaults).
	Streams StreamLimits
}

// Routes lists every feature's routes.
func (f Features) Routes() []Routes {
	return []Routes{
		CapacityRoutes(f.Commands),
		ReadRoutes(f.Queries),
		FleetReadRoutes(f.Queries),
		TenantReadRoutes(f.Queries),
		EventRoutes(EventAPI{Broker: f.Broker, Reader: f.EventReader, Limits: f.Streams}),
		WebhookRoutes(f.Webhooks),
		NodeRoutes(f.Commands),
		NodeJobRoutes(f.Commands),
		InstanceRoutes(f.Commands),
	}
}
