package core

// EventTypes returns every event type declared in package core
// (event_types.go, node_events.go and node_command.go), in a fixed order.
// docs/openapi.yaml documents each one's data; a test in httpapi fails when
// an Event* constant is missing here, or a type here is not documented there.
func EventTypes() []string {
	return []string{
		EventSiteCreated,
		EventPoolCreated,

		EventNodeRegistered,
		EventNodeCordoned,
		EventNodeUncordoned,
		EventNodeTainted,
		EventNodeUntainted,

		EventGPURegistered,
		EventGPUModeChanged,
		EventDeviceQuarantined,
		EventDeviceUnquarantined,
		EventDeviceHealthChanged,

		EventQuotaSet,

		EventReservationPending,
		EventReservationBooked,
		EventReservationActivated,
		EventReservationExtended,
		EventReservationReleased,
		EventReservationCancelled,
		EventReservationExpired,
		EventReservationFailed,

		EventNodeConnected,
		EventNodeDisconnected,
		EventNodeUnreachable,
		EventNodeLost,
		EventNodeDraining,
		EventNodeUndrained,
		EventNodeRetired,
		EventNodeJoined,

		EventNodeCommandQueued,
		EventNodeCommandSent,
		EventNodeCommandRunning,
		EventNodeCommandSucceeded,
		EventNodeCommandFailed,

		EventInstanceRequested,
		EventInstanceProvisioning,
		EventInstanceRunning,
		EventInstanceStopping,
		EventInstanceStopped,
		EventInstanceFailed,
	}
}
