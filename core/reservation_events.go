package core

import "time"

// ReservationEventData is the data of every reservation.* event: the whole
// reservation as of the transition, enough for a read model to be rebuilt
// from the log alone. Billing in particular needs no other table: the
// allocation the reservation holds (the allocationId of the usage-window
// key cmp:<allocationId>:<windowStart>) and the scalars it reserved.
type ReservationEventData struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	State  State  `json:"state"`
	// PoolID and SiteID are what was asked for; one of them is empty.
	PoolID string    `json:"poolId"`
	SiteID string    `json:"siteId"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	// NodeID and DeviceIDs say where it was placed: empty and null if it
	// never was. Terminal events keep them (where it ran).
	NodeID    string   `json:"nodeId"`
	DeviceIDs []string `json:"deviceIds"`
	// AllocationID is the allocation the reservation holds (or held): set
	// once placed, absent while pending or if it never was placed. A
	// reservation has at most one allocation.
	AllocationID string `json:"allocationId,omitempty"`
	// PlacedPoolID is, in reservation.booked, the pool of the node it was
	// placed on: a site reservation names no pool of its own, and the
	// usage windows, rebuilt from the log alone, need one. Absent in other
	// events and in events written before it was added.
	PlacedPoolID string `json:"placedPoolId,omitempty"`

	// What was reserved, as the request asked (the same names as the API's
	// reservation): Gpus atoms of GPUKind (gpu, mig or slot) on one node,
	// of GPUModel when one was asked for, of one MIGProfile or SlotKind;
	// vCPU, memory (MB) and disk (GB) held on the node.
	Gpus       int      `json:"gpus"`
	GPUKind    AtomKind `json:"gpuKind,omitempty"`
	GPUModel   string   `json:"gpuModel,omitempty"`
	MIGProfile string   `json:"migProfile,omitempty"`
	SlotKind   GPUMode  `json:"slotKind,omitempty"`
	VCPU       int64    `json:"vcpu"`
	MemoryMB   int64    `json:"memoryMb"`
	DiskGB     int64    `json:"diskGb"`

	Tolerations []string    `json:"tolerations"`
	Conditions  []Condition `json:"conditions"`
	Version     int64       `json:"version"`

	// PriorityClass is the reservation's priority class, Priority and
	// Preemptible the class's value and flag copied when it was created.
	// Commands always write all three; events written before priority
	// classes existed lack them, which means the class standard, priority
	// 0, not preemptible (LegacyPriorityClass).
	PriorityClass string `json:"priorityClass,omitempty"`
	Priority      *int32 `json:"priority,omitempty"`
	Preemptible   *bool  `json:"preemptible,omitempty"`

	// PreemptedBy is, in reservation.preempted, the reservation that
	// displaced this one, and in reservation.shortened the one that booked
	// its devices from its new end; absent in every other event.
	PreemptedBy string `json:"preemptedBy,omitempty"`
}

// NewReservationEventData builds the data of a reservation event from the
// reservation as written and the id of its allocation ("" when it holds
// none). Tolerations and conditions are written as arrays, never null.
func NewReservationEventData(r Reservation, allocationID string) ReservationEventData {
	d := ReservationEventData{
		ID: r.ID, Tenant: r.Tenant, State: r.State, PoolID: r.PoolID, SiteID: r.SiteID,
		Start: r.Start, End: r.End, NodeID: r.NodeID, DeviceIDs: r.DeviceIDs, AllocationID: allocationID,
		Gpus: r.Spec.GPU.Count, GPUModel: r.Spec.GPU.Model, MIGProfile: r.Spec.GPU.MIGProfile,
		SlotKind: r.Spec.GPU.SlotKind, VCPU: r.Spec.VCPU, MemoryMB: r.Spec.MemoryMB, DiskGB: r.Spec.DiskGB,
		Tolerations: r.Spec.Tolerations, Conditions: r.Conditions, Version: r.Version,
		PriorityClass: r.PriorityClass, Priority: &r.Priority, Preemptible: &r.Preemptible,
	}
	if d.Gpus > 0 {
		d.GPUKind = r.Spec.GPU.Kind
	}
	if d.Tolerations == nil {
		d.Tolerations = []string{}
	}
	if d.Conditions == nil {
		d.Conditions = []Condition{}
	}
	return d
}
