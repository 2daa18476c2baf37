package projections

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// DeviceHolders projects reservation events into rm_device_holders: for
// each atom, which reservation held it over which interval. It answers
// "who held device X at time T" for any T, including long after the write
// model freed the booking. It mirrors the write model's bookings:
//
//   - booked: each atom from max(start, the event's time) to end (a pending
//     reservation placed late is booked from the moment it was placed);
//   - extended, activated: the same start, the event's end;
//   - released, expired, failed: cut at the event's time; a hold that had
//     not begun becomes empty (the write model deletes such a booking).
type DeviceHolders struct{}

// ID is the sink id and projection name.
func (DeviceHolders) ID() string { return NameDeviceHolders }

// Tables are the tables this projection owns.
func (DeviceHolders) Tables() []string { return []string{"rm_device_holders"} }

// Seed fills rm_device_holders from the write model at the start of a
// rebuild (Seeder): every allocation's atoms over their bookings, at the
// reservation's version, so that a rebuild after retention pruned a
// booking still knows who holds, and who held, each atom.
func (DeviceHolders) Seed(ctx context.Context, tx pgx.Tx) error {
	if err := db.New(tx).RmDeviceHolderSeed(ctx); err != nil {
		return fmt.Errorf("seed rm_device_holders: %w", err)
	}
	return nil
}

// Apply writes each reservation event of the batch in tx, in one round
// trip: the writes read nothing back.
func (DeviceHolders) Apply(ctx context.Context, tx pgx.Tx, events []outbox.Stored) error {
	var b pg.Batch
	err := applyEach(events, func(e outbox.Stored) error {
		if !reservationEventTypes[e.Type] {
			return nil
		}
		r, err := decodeReservation(e)
		if err != nil || !r.placed() {
			return err
		}
		switch {
		case e.Type == core.EventReservationBooked:
			pg.Exec(ctx, &b, (*db.Queries).RmDeviceHolderBook, db.RmDeviceHolderBookParams{ReservationID: r.ID, TenantID: r.Tenant,
				NodeID: r.NodeID, StartTs: r.Start, At: e.Time, EndTs: r.End, Version: r.Version,
				Txid: e.Position.TxID, Seq: e.Position.Seq, DeviceIds: r.DeviceIDs})
		case r.ended():
			pg.Exec(ctx, &b, (*db.Queries).RmDeviceHolderEndAt, db.RmDeviceHolderEndAtParams{ReservationID: r.ID, At: e.Time,
				Version: r.Version, Txid: e.Position.TxID, Seq: e.Position.Seq})
		default:
			pg.Exec(ctx, &b, (*db.Queries).RmDeviceHolderSetEnd, db.RmDeviceHolderSetEndParams{ReservationID: r.ID, EndTs: r.End,
				Version: r.Version, Txid: e.Position.TxID, Seq: e.Position.Seq})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := b.Send(ctx, tx); err != nil {
		return fmt.Errorf("write device holders: %w", err)
	}
	return nil
}
