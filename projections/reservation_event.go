package projections

import (
	"encoding/json"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/outbox"
)

// reservationEventTypes are the events of the reservation aggregate. Each
// carries the whole reservation as of that transition (commands'
// reservationEvent), so any one of them is enough to write its row.
var reservationEventTypes = map[string]bool{
	core.EventReservationPending: true, core.EventReservationBooked: true, core.EventReservationActivated: true,
	core.EventReservationExtended: true, core.EventReservationReleased: true, core.EventReservationCancelled: true,
	core.EventReservationExpired: true, core.EventReservationFailed: true, core.EventReservationPreempted: true,
	core.EventReservationShortened: true,
}

// reservationData is the data of a reservation event
// (core.ReservationEventData). The optional fields are missing from events
// written before the commands wrote them (placedPoolId is written in
// reservation.booked only); projections then use their fallbacks.
type reservationData struct {
	ID          string          `json:"id"`
	Tenant      string          `json:"tenant"`
	State       core.State      `json:"state"`
	PoolID      string          `json:"poolId"`
	SiteID      string          `json:"siteId"`
	NodeID      string          `json:"nodeId"`
	DeviceIDs   []string        `json:"deviceIds"`
	Tolerations []string        `json:"tolerations"`
	Conditions  json.RawMessage `json:"conditions"`
	Start       time.Time       `json:"start"`
	End         time.Time       `json:"end"`
	Version     int64           `json:"version"`

	// AllocationID names the write model's allocation (a reservation has
	// at most one); events written before it was added lack it, and the
	// usage-windows projection then reads it from the write model
	// (billedOf).
	AllocationID string `json:"allocationId,omitempty"`
	// PlacedPoolID is the pool of the node (a site reservation names no
	// pool); without it, the node's pool in the fleet model is used.
	PlacedPoolID string `json:"placedPoolId,omitempty"`
	// What was asked for (core.ReservationEventData); GPUKind is absent
	// when no GPU was.
	Gpus       int           `json:"gpus"`
	GPUKind    core.AtomKind `json:"gpuKind,omitempty"`
	GPUModel   string        `json:"gpuModel,omitempty"`
	MIGProfile string        `json:"migProfile,omitempty"`
	SlotKind   core.GPUMode  `json:"slotKind,omitempty"`
	VCPU       *int64        `json:"vcpu,omitempty"`
	MemoryMB   *int64        `json:"memoryMb,omitempty"`
	DiskGB     *int64        `json:"diskGb,omitempty"`
	// PriorityClass, Priority and Preemptible are missing from events
	// written before priority classes existed: those reservations are of
	// the class standard, priority 0, not preemptible (decodeReservation).
	PriorityClass string `json:"priorityClass,omitempty"`
	Priority      int32  `json:"priority,omitempty"`
	Preemptible   bool   `json:"preemptible,omitempty"`
}

// placed reports whether the reservation was ever given a node: only then
// does it hold (or did it hold) devices and scalars.
func (r reservationData) placed() bool { return r.NodeID != "" }

// spec is the request the event carries, as the reservation's detail
// shows it (core.ReservationSpec).
func (r reservationData) spec() core.ReservationSpec {
	deref := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	return core.ReservationSpec{
		GPU: core.GPURequest{Count: r.Gpus, Kind: r.GPUKind, Model: r.GPUModel, MIGProfile: r.MIGProfile,
			SlotKind: r.SlotKind},
		VCPU: deref(r.VCPU), MemoryMB: deref(r.MemoryMB), DiskGB: deref(r.DiskGB), Tolerations: r.Tolerations,
	}
}

// ended reports whether this event ended the reservation's hold on its
// capacity (release, expiry, failure, cancellation).
func (r reservationData) ended() bool {
	return core.ReservationStateTable().Terminal[r.State]
}

func decodeReservation(e outbox.Stored) (reservationData, error) {
	r, err := decode[reservationData](e)
	if err != nil {
		return r, err
	}
	if r.DeviceIDs == nil {
		r.DeviceIDs = []string{}
	}
	if r.Tolerations == nil {
		r.Tolerations = []string{}
	}
	if len(r.Conditions) == 0 || string(r.Conditions) == "null" {
		r.Conditions = json.RawMessage("[]")
	}
	if r.PriorityClass == "" {
		r.PriorityClass = core.LegacyPriorityClass
	}
	return r, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
