package core

// Event types written by the capacity core. Each committed transition of an
// aggregate writes exactly one event, whose data carries the aggregate's new
// "version"; the invariant checker relies on that.
const (
	EventSiteCreated = "site.created"
	EventSiteUpdated = "site.updated"
	EventPoolCreated = "pool.created"

	EventNodeRegistered = "node.registered"
	EventNodeCordoned   = "node.cordoned"
	EventNodeUncordoned = "node.uncordoned"
	EventNodeTainted    = "node.tainted"
	EventNodeUntainted  = "node.untainted"

	EventGPURegistered       = "gpu.registered"
	EventGPUModeChanged      = "gpu.mode_changed"
	EventDeviceQuarantined   = "device.quarantined"
	EventDeviceUnquarantined = "device.unquarantined"
	EventDeviceHealthChanged = "device.health_changed"

	EventQuotaSet = "quota.set"

	EventPriorityClassCreated     = "priority_class.created"
	EventTenantPriorityClassesSet = "tenant.priority_classes_set"

	EventTenantFairShareSet = "tenant.fair_share_set"

	EventTenantSuspended = "tenant.suspended"
	EventTenantResumed   = "tenant.resumed"

	EventReservationPending   = "reservation.pending"
	EventReservationBooked    = "reservation.booked"
	EventReservationActivated = "reservation.activated"
	EventReservationExtended  = "reservation.extended"
	EventReservationReleased  = "reservation.released"
	EventReservationCancelled = "reservation.cancelled"
	EventReservationExpired   = "reservation.expired"
	EventReservationFailed    = "reservation.failed"
	EventReservationPreempted = "reservation.preempted"
	EventReservationShortened = "reservation.shortened"
)

// EligibilityEventTypes are the events that change whether new bookings may
// land on a node or GPU; the invariant checker replays them in log order.
var EligibilityEventTypes = []string{
	EventNodeRegistered, EventNodeCordoned, EventNodeUncordoned, EventNodeTainted, EventNodeUntainted,
	EventGPURegistered, EventDeviceQuarantined, EventDeviceUnquarantined, EventDeviceHealthChanged,
}

// Subject helpers: an event's subject names its aggregate as
// "<collection>/<id>", which is also how versions are grouped.
func SiteSubject(id string) string        { return "sites/" + id }
func PoolSubject(id string) string        { return "pools/" + id }
func NodeSubject(id string) string        { return "nodes/" + id }
func DeviceSubject(id string) string      { return "devices/" + id }
func ReservationSubject(id string) string { return "reservations/" + id }

// QuotaSubject names one tenant's quota for one resource.
func QuotaSubject(tenant, resource string) string { return "quotas/" + tenant + "/" + resource }
