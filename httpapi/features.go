package httpapi

import (
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/events"
	"github.com/bettercompute/compute/nodes"
	"github.com/bettercompute/compute/queries"
	"github.com/bettercompute/compute/webhook"
)

// Features are the services behind the feature routes. main and the
// route/spec agreement test both build the API from this one list, so the
// test checks exactly what the server serves.
type Features struct {
	Commands    *commands.Handlers
	Queries     *queries.Service
	Broker      *events.Broker
	EventReader *events.Reader
	Webhooks    *webhook.Service
	Nodes       *nodes.Service
}

// Routes lists every feature's routes.
func (f Features) Routes() []Routes {
	return []Routes{
		CapacityRoutes(f.Commands),
		ReadRoutes(f.Queries),
		EventRoutes(f.Broker, f.EventReader),
		WebhookRoutes(f.Webhooks),
		NodeRoutes(f.Commands, f.Nodes),
		CommandRoutes(f.Commands),
		InstanceRoutes(f.Commands),
	}
}
