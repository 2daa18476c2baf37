package core

// Reservation states. A reservation holds its quota charge in every
// non-terminal state, pending included.
const (
	// ReservationPending: accepted and charged, not placed yet (see its
	// Unschedulable condition); retried every 30 s.
	ReservationPending State = "pending"
	// ReservationBooked: devices and scalars are held for the window.
	ReservationBooked State = "booked"
	// ReservationActive: the window has started.
	ReservationActive State = "active"
	// ReservationReleased: given back by the tenant; capacity freed.
	ReservationReleased State = "released"
	// ReservationExpired: the window ended; capacity freed.
	ReservationExpired State = "expired"
	// ReservationCancelled: withdrawn while pending.
	ReservationCancelled State = "cancelled"
	// ReservationFailed: could not be honoured (e.g. the node refused it).
	ReservationFailed State = "failed"
	// ReservationPreempted: displaced by a reservation of a strictly
	// higher priority (docs/concepts/priority.md); capacity freed, quota
	// refunded, its workloads stopped after its class's grace.
	ReservationPreempted State = "preempted"
)

// reservationStateTable is the reservation lifecycle:
// pending → booked → active → released | expired | cancelled | failed,
// and booked or active → preempted.
// pending → pending, booked → booked and active → active are extensions.
var reservationStateTable = StateTable{
	Name: "reservation",
	States: []State{ReservationPending, ReservationBooked, ReservationActive,
		ReservationReleased, ReservationExpired, ReservationCancelled, ReservationFailed, ReservationPreempted},
	Terminal: map[State]bool{ReservationReleased: true, ReservationExpired: true,
		ReservationCancelled: true, ReservationFailed: true, ReservationPreempted: true},
	Next: map[State][]State{
		StateNone:          {ReservationPending, ReservationBooked},
		ReservationPending: {ReservationPending, ReservationBooked, ReservationCancelled, ReservationExpired, ReservationFailed},
		ReservationBooked: {ReservationBooked, ReservationActive, ReservationReleased, ReservationExpired, ReservationFailed,
			ReservationPreempted},
		ReservationActive: {ReservationActive, ReservationReleased, ReservationExpired, ReservationFailed, ReservationPreempted},
	},
}

// ReservationStateTable returns the reservation lifecycle table.
func ReservationStateTable() StateTable { return reservationStateTable }

// ReservationHoldsQuota reports whether a reservation in s holds its charge.
func ReservationHoldsQuota(s State) bool {
	return s == ReservationPending || s == ReservationBooked || s == ReservationActive
}

// ReservationHoldsCapacity reports whether a reservation in s holds devices
// and scalars (a live allocation).
func ReservationHoldsCapacity(s State) bool {
	return s == ReservationBooked || s == ReservationActive
}
