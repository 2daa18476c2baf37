package queries

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReservationDetail is a reservation as its GET shows it: the read model's
// view (Reservation) plus what it charged the tenant's quota and the
// allocation it holds or held.
//
// Those two come from the write model, read when the request is served:
// the charges exist nowhere else (placement adds the gpu:<model> quota it
// charged for the atoms it booked, and no event carries them), and the
// allocation and the request (Spec, which the read model has too) are read
// with them so that the detail is one consistent row. The detail may
// therefore be a little ahead of the read model's fields (a pending
// reservation placed a moment ago may show its allocation before its state
// says booked); minPosition makes the read model's part catch up with a
// write the caller made.
type ReservationDetail struct {
	Reservation
	// Charges is what the reservation holds of its tenant's quota, by
	// resource (gpu, gpu:<model>, vcpu, memory, disk); it holds them in
	// every non-terminal state and gives back exactly them when it ends.
	Charges map[string]int64 `json:"charges"`
	// Allocation is where it was placed; null if it never was.
	Allocation *Allocation `json:"allocation"`
	// Queue is where a pending reservation stands in the waiting line of
	// its pool or site, and why it waits; absent when it is not pending.
	Queue *ReservationQueue `json:"queue,omitempty"`
}

// Allocation is what a placed reservation holds on its node: the GPU atoms
// and the scalars. ReleasedAt is set once they were given back.
type Allocation struct {
	ID         string     `json:"id"`
	NodeID     string     `json:"nodeId"`
	DeviceIDs  []string   `json:"deviceIds"`
	VCPU       int64      `json:"vcpu"`
	MemoryMB   int64      `json:"memoryMb"`
	DiskGB     int64      `json:"diskGb"`
	CreatedAt  time.Time  `json:"createdAt"`
	ReleasedAt *time.Time `json:"releasedAt,omitempty"`
}

// reservationDetail fills in d's spec, charges and allocation. Reservations
// are never deleted, so the write row is there whenever the read model has
// one; if it is not (a read model rebuilt from another database's log),
// the detail stays empty rather than hiding a reservation the list shows.
func (s *Service) reservationDetail(ctx context.Context, d *ReservationDetail) error {
	row, err := s.q().ReservationDetailGet(ctx, d.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return wrap(err, "reservation "+d.ID)
	}
	if err := decodeSpec(row.Spec, &d.Spec); err != nil {
		return wrap(err, "decode spec of reservation "+d.ID)
	}
	if err := json.Unmarshal(row.Charges, &d.Charges); err != nil {
		return wrap(err, "decode charges of reservation "+d.ID)
	}
	if row.AllocationID != nil {
		d.Allocation = &Allocation{ID: *row.AllocationID, NodeID: deref(row.AllocationNodeID),
			DeviceIDs: row.AllocationDeviceIds, VCPU: derefInt(row.AllocationVcpu),
			MemoryMB: derefInt(row.AllocationMemory), DiskGB: derefInt(row.AllocationDisk),
			ReleasedAt: utc(row.AllocationReleasedAt)}
		if row.AllocationCreatedAt != nil {
			d.Allocation.CreatedAt = row.AllocationCreatedAt.UTC()
		}
		if d.Allocation.DeviceIDs == nil {
			d.Allocation.DeviceIDs = []string{}
		}
	}
	return nil
}

func derefInt(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
}
