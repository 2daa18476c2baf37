package queries

import (
	"context"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
)

// Holder is a reservation that held a device at the time asked about, with
// the interval it held it and the log position of the event that last
// shaped that interval (so the answer can be traced back in the log).
type Holder struct {
	Booking
	Position string `json:"position"`
}

// DeviceHolders answers "who held device X at time T" (operators only),
// from the device-holders read model, which keeps every hold the log ever
// described, not only live bookings. X may be a GPU (its atoms' holders are
// included) or an atom (a holder of its whole GPU is included).
func (s *Service) DeviceHolders(ctx context.Context, actor core.Actor, deviceID string, at time.Time, min outbox.Position) ([]Holder, error) {
	if err := requireOperator(actor, "device holders"); err != nil {
		return nil, err
	}
	if at.IsZero() {
		return nil, core.Errorf(core.CodeInvalidArgument, "a point in time (at) is required")
	}
	q, err := s.readModel(ctx, min, projections.NameFleet, projections.NameDeviceHolders)
	if err != nil {
		return nil, err
	}
	if _, err := q.RmFleetDeviceGet(ctx, deviceID); err != nil {
		return nil, wrap(err, "device "+deviceID)
	}
	rows, err := q.RmDeviceHolderAt(ctx, db.RmDeviceHolderAtParams{DeviceID: deviceID, At: at})
	if err != nil {
		return nil, wrap(err, "holders of "+deviceID)
	}
	out := []Holder{}
	for _, h := range rows {
		out = append(out, Holder{
			Booking: Booking{DeviceID: h.DeviceID, ReservationID: h.ReservationID, Tenant: h.TenantID, NodeID: h.NodeID,
				From: h.FromTs.UTC(), To: h.ToTs.UTC()},
			Position: outbox.Position{TxID: h.UpdatedTxid, Seq: h.UpdatedSeq}.String(),
		})
	}
	return out, nil
}
