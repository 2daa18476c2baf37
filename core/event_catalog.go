package core

import (
	"reflect"
	"slices"
	"strings"
)

// EventSpec is one event type of the log: its name, the Go type marshalled
// as its data, and who may read it.
type EventSpec struct {
	// Type is the event type, such as "reservation.booked".
	Type string
	// Payload is the struct whose JSON is the event's data: its writer
	// marshals it and its readers decode into it. httpapi's event schema
	// tests check its JSON fields against the data schema of docs/openapi.yaml.
	Payload reflect.Type
	// TenantScoped events carry the tenant id of the object they are about
	// in the envelope's tenantId and reach that tenant's readers. The others
	// are fleet-wide (sites, pools, priority classes, nodes, GPUs and
	// devices, node credentials and assignments): their envelope's tenantId
	// is null, as the spec's envelope {id, type, tenantId, subject, data,
	// time} always has the field, and they reach operators only.
	TenantScoped bool
	// Summary says in one line when the event is written.
	Summary string
}

var (
	nodeCommandPayload = reflect.TypeFor[NodeCommand]()
	instancePayload    = reflect.TypeFor[Instance]()
	reservationPayload = reflect.TypeFor[ReservationEventData]()

	sitePayload           = reflect.TypeFor[SiteEventData]()
	poolPayload           = reflect.TypeFor[PoolEventData]()
	quotaPayload          = reflect.TypeFor[QuotaEventData]()
	priorityClassPayload  = reflect.TypeFor[PriorityClassEventData]()
	tenantClassesPayload  = reflect.TypeFor[TenantPriorityClassesEventData]()
	fairSharePayload      = reflect.TypeFor[TenantFairShareEventData]()
	suspensionPayload     = reflect.TypeFor[TenantSuspensionEventData]()
	gpuRegisteredPayload  = reflect.TypeFor[GPURegisteredEventData]()
	gpuModeChangedPayload = reflect.TypeFor[GPUModeChangedEventData]()
	deviceStatusPayload   = reflect.TypeFor[DeviceStatusEventData]()

	nodeRegisteredPayload          = reflect.TypeFor[NodeRegisteredEventData]()
	nodeSchedulingPayload          = reflect.TypeFor[NodeSchedulingEventData]()
	nodeConnectedPayload           = reflect.TypeFor[NodeConnectedEventData]()
	nodeDisconnectedPayload        = reflect.TypeFor[NodeDisconnectedEventData]()
	nodeUnreachablePayload         = reflect.TypeFor[NodeUnreachableEventData]()
	nodeLostPayload                = reflect.TypeFor[NodeLostEventData]()
	nodeDrainPayload               = reflect.TypeFor[NodeDrainEventData]()
	nodeRetiredPayload             = reflect.TypeFor[NodeRetiredEventData]()
	nodeJoinedPayload              = reflect.TypeFor[NodeJoinedEventData]()
	nodeCredentialRevokedPayload   = reflect.TypeFor[NodeCredentialRevokedEventData]()
	nodeInventoryReconciledPayload = reflect.TypeFor[NodeInventoryReconciledEventData]()

	webhookEndpointPayload          = reflect.TypeFor[WebhookEndpointEventData]()
	webhookEndpointRecoveredPayload = reflect.TypeFor[WebhookEndpointRecoveredEventData]()
)

// eventCatalog is every event type of the log, grouped by aggregate. Add a
// type here, with its constant, its payload struct and its schema in
// docs/openapi.yaml (TypedEvent), in the same change: tests in core and
// httpapi fail until they agree.
var eventCatalog = []EventSpec{
	{Type: EventSiteCreated, Payload: sitePayload, Summary: "A site was created."},
	{Type: EventSiteUpdated, Payload: sitePayload, Summary: "An operator renamed a site."},
	{Type: EventPoolCreated, Payload: poolPayload, Summary: "A pool was created."},

	{Type: EventNodeRegistered, Payload: nodeRegisteredPayload, Summary: "A node was registered with its inventory."},
	{Type: EventNodeCordoned, Payload: nodeSchedulingPayload, Summary: "A node was cordoned: no new bookings."},
	{Type: EventNodeUncordoned, Payload: nodeSchedulingPayload, Summary: "A node was uncordoned."},
	{Type: EventNodeTainted, Payload: nodeSchedulingPayload, Summary: "A NoSchedule taint was added to a node."},
	{Type: EventNodeUntainted, Payload: nodeSchedulingPayload, Summary: "A taint was removed from a node."},

	{Type: EventGPURegistered, Payload: gpuRegisteredPayload, Summary: "A GPU was registered with its node, one event per GPU."},
	{Type: EventGPUModeChanged, Payload: gpuModeChangedPayload, Summary: "A GPU's sharing layout changed."},
	{Type: EventDeviceQuarantined, Payload: deviceStatusPayload, Summary: "A GPU was quarantined."},
	{Type: EventDeviceUnquarantined, Payload: deviceStatusPayload, Summary: "A GPU was let back out of quarantine."},
	{Type: EventDeviceHealthChanged, Payload: deviceStatusPayload, Summary: "A GPU's health changed."},

	{Type: EventQuotaSet, Payload: quotaPayload, TenantScoped: true, Summary: "A tenant's quota for one resource was set."},

	{Type: EventPriorityClassCreated, Payload: priorityClassPayload, Summary: "An operator created a priority class."},
	{Type: EventTenantPriorityClassesSet, Payload: tenantClassesPayload, TenantScoped: true,
		Summary: "An operator replaced the priority classes a tenant may use besides the default one."},
	{Type: EventTenantFairShareSet, Payload: fairSharePayload, TenantScoped: true,
		Summary: "An operator set a tenant's fair share of the waiting line."},
	{Type: EventTenantSuspended, Payload: suspensionPayload, TenantScoped: true,
		Summary: "An operator suspended a tenant: its tokens are refused and it can create nothing (data.reason says why)."},
	{Type: EventTenantResumed, Payload: suspensionPayload, TenantScoped: true,
		Summary: "An operator resumed a suspended tenant: its tokens work again."},

	{Type: EventReservationPending, Payload: reservationPayload, TenantScoped: true, Summary: "A reservation waits for capacity: it was created pending, or a retry found other reasons why it waits."},
	{Type: EventReservationBooked, Payload: reservationPayload, TenantScoped: true, Summary: "A reservation was placed on a node."},
	{Type: EventReservationActivated, Payload: reservationPayload, TenantScoped: true, Summary: "A booked reservation reached its start."},
	{Type: EventReservationExtended, Payload: reservationPayload, TenantScoped: true, Summary: "A reservation's end moved later."},
	{Type: EventReservationReleased, Payload: reservationPayload, TenantScoped: true, Summary: "A reservation was released early."},
	{Type: EventReservationCancelled, Payload: reservationPayload, TenantScoped: true, Summary: "A reservation was cancelled before it started."},
	{Type: EventReservationExpired, Payload: reservationPayload, TenantScoped: true, Summary: "A reservation reached its end."},
	{Type: EventReservationFailed, Payload: reservationPayload, TenantScoped: true,
		Summary: "A booked or active reservation failed: its node's daemon refused or rejected its assignment."},
	{Type: EventReservationPreempted, Payload: reservationPayload, TenantScoped: true,
		Summary: "A booked or active reservation was displaced by one of a strictly higher priority (data.preemptedBy names it)."},
	{Type: EventReservationShortened, Payload: reservationPayload, TenantScoped: true,
		Summary: "A reservation's end moved earlier: one of a strictly higher priority (data.preemptedBy names it) booked its devices from its new end."},

	{Type: EventNodeConnected, Payload: nodeConnectedPayload, Summary: "A node's daemon opened a session while the node was not connected."},
	{Type: EventNodeDisconnected, Payload: nodeDisconnectedPayload, Summary: "A node's session closed or its gateway was lost."},
	{Type: EventNodeUnreachable, Payload: nodeUnreachablePayload, Summary: "A node was without a session past the threshold and grace."},
	{Type: EventNodeLost, Payload: nodeLostPayload, Summary: "A provider or vps-host node stayed unreachable past its pool's lostAfter."},
	{Type: EventNodeDraining, Payload: nodeDrainPayload, Summary: "An operator drained a node."},
	{Type: EventNodeUndrained, Payload: nodeDrainPayload, Summary: "An operator let new bookings back on a node."},
	{Type: EventNodeRetired, Payload: nodeRetiredPayload, Summary: "An operator retired a node; its credentials are revoked."},
	{Type: EventNodeJoined, Payload: nodeJoinedPayload, Summary: "A node credential was issued."},
	{Type: EventNodeCredentialRevoked, Payload: nodeCredentialRevokedPayload, Summary: "A node credential was revoked, or superseded by a re-join."},
	{Type: EventNodeInventoryReconciled, Payload: nodeInventoryReconciledPayload,
		Summary: "A daemon's inventory changed its node's record (GPUs missing, back, new or mismatched, workloads refused or run again, scalars adopted), or the node's resync adopted a shrink of its scalars that waited for its bookings to fit."},

	{Type: EventNodeCommandQueued, Payload: nodeCommandPayload, TenantScoped: true,
		Summary: "A node job was accepted and waits for dispatch."},
	{Type: EventNodeCommandSent, Payload: nodeCommandPayload, TenantScoped: true,
		Summary: "A node job was sent to a daemon (the data adds sessionEpoch and journalId)."},
	{Type: EventNodeCommandRunning, Payload: nodeCommandPayload, TenantScoped: true,
		Summary: "A daemon started a node job."},
	{Type: EventNodeCommandSucceeded, Payload: nodeCommandPayload, TenantScoped: true,
		Summary: "A node job succeeded."},
	{Type: EventNodeCommandFailed, Payload: nodeCommandPayload, TenantScoped: true,
		Summary: "A node job failed, or its daemon lost it."},
	{Type: EventNodeCommandCancelled, Payload: nodeCommandPayload, TenantScoped: true,
		Summary: "A queued instance-start was dropped unsent: its instance stopped before it could be sent."},
	{Type: EventNodeCommandTimedOut, Payload: nodeCommandPayload, TenantScoped: true,
		Summary: "A node job ended unanswered: its node was unreachable or lost for longer than the node job timeout, or retired."},

	{Type: EventNodeAssignmentQueued, Payload: nodeCommandPayload,
		Summary: "An assign or unassign node job was queued: an allocation goes to its node's daemon, or leaves it."},
	{Type: EventNodeAssignmentSent, Payload: nodeCommandPayload,
		Summary: "An assign or unassign node job was sent to a daemon (the data adds sessionEpoch and journalId)."},
	{Type: EventNodeAssignmentRunning, Payload: nodeCommandPayload,
		Summary: "A daemon started an assign or unassign node job."},
	{Type: EventNodeAssignmentSucceeded, Payload: nodeCommandPayload,
		Summary: "A daemon took an allocation (assign) or gave it back, its workloads stopped (unassign)."},
	{Type: EventNodeAssignmentFailed, Payload: nodeCommandPayload,
		Summary: "A daemon refused or rejected an assign, or an assign or unassign failed."},

	{Type: EventInstanceRequested, Payload: instancePayload, TenantScoped: true, Summary: "An instance was requested."},
	{Type: EventInstanceProvisioning, Payload: instancePayload, TenantScoped: true, Summary: "An instance is being started on its node."},
	{Type: EventInstanceRunning, Payload: instancePayload, TenantScoped: true, Summary: "An instance is running."},
	{Type: EventInstanceStopping, Payload: instancePayload, TenantScoped: true, Summary: "An instance is being stopped."},
	{Type: EventInstanceStopped, Payload: instancePayload, TenantScoped: true, Summary: "An instance stopped."},
	{Type: EventInstanceFailed, Payload: instancePayload, TenantScoped: true, Summary: "An instance failed (its exitCode, when its process exited non-zero)."},
	{Type: EventInstanceSucceeded, Payload: instancePayload, TenantScoped: true, Summary: "An instance's process exited on its own with status 0."},

	{Type: EventWebhookEndpointCreated, Payload: webhookEndpointPayload, TenantScoped: true, Summary: "A webhook endpoint was created."},
	{Type: EventWebhookEndpointUpdated, Payload: webhookEndpointPayload, TenantScoped: true, Summary: "A webhook endpoint was changed."},
	{Type: EventWebhookEndpointDeleted, Payload: webhookEndpointPayload, TenantScoped: true, Summary: "A webhook endpoint was deleted."},
	{Type: EventWebhookEndpointSecretRotated, Payload: webhookEndpointPayload, TenantScoped: true, Summary: "A webhook endpoint's signing secret was rotated."},
	{Type: EventWebhookEndpointDisabled, Payload: webhookEndpointPayload, TenantScoped: true,
		Summary: "Deliveries disabled a webhook endpoint (410 Gone, or failing for too long)."},
	{Type: EventWebhookEndpointRecovered, Payload: webhookEndpointRecoveredPayload, TenantScoped: true,
		Summary: "A webhook endpoint's undelivered events were scheduled again."},
}

// EventCatalog returns every event type of the log, in a fixed order.
func EventCatalog() []EventSpec { return slices.Clone(eventCatalog) }

// EventTypes returns the names of EventCatalog, in the same order.
func EventTypes() []string {
	out := make([]string, len(eventCatalog))
	for i, e := range eventCatalog {
		out[i] = e.Type
	}
	return out
}

// LookupEvent returns the catalog entry of an event type.
func LookupEvent(typ string) (EventSpec, bool) {
	i := slices.IndexFunc(eventCatalog, func(e EventSpec) bool { return e.Type == typ })
	if i < 0 {
		return EventSpec{}, false
	}
	return eventCatalog[i], true
}

// EventTypeHint is what a refusal of an unknown event type adds: the
// catalog's types of the same family (the part before the first dot: for
// "reservation.created", every "reservation." type) that the reader may
// see, fleet events left out when tenantOnly, as "; reservation.* are
// reservation.pending, reservation.booked, …". A typo is then answered
// with the name meant, not only with "no such type". Empty when the family
// has none.
func EventTypeHint(typ string, tenantOnly bool) string {
	family, _, ok := strings.Cut(typ, ".")
	if !ok || family == "" {
		return ""
	}
	var names []string
	for _, e := range eventCatalog {
		if strings.HasPrefix(e.Type, family+".") && (e.TenantScoped || !tenantOnly) {
			names = append(names, e.Type)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "; " + family + ".* are " + strings.Join(names, ", ")
}
