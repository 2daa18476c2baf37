package projections

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// Reservations projects reservation events into rm_reservations: per tenant,
// each reservation's request, state, place, window and conditions. Every
// reservation event carries the whole reservation, so each one simply
// overwrites the row when its version is newer.
//
// It is a Seeder: a rebuild after retention pruned the log still lists
// every reservation, in the order the live table had (Seed).
type Reservations struct{}

// Seed fills rm_reservations from the write model at the start of a
// rebuild (Seeder): every reservation at its version, as its events wrote
// it (RmReservationSeed).
//
// A row's place in GET /v1/reservations, and in its cursors, is the
// position (txid, seq) of the reservation's creating event. While the log
// keeps that event, the row gets its exact position. Once it is pruned,
// the row gets (created_txid, 0): the transaction that created the
// reservation, which the write model records (migration 0047). Every
// reservation is created in a transaction of its own (ReservationCreate),
// so no other row has that txid, and the order of two rows is decided by
// their txids alone, as before: the list keeps its order. A cursor handed
// out before the rebuild is the live position (txid, seq) of some row,
// seq > 0; against every other row it compares by txid, as before, and
// against its own row, now at (txid, 0), it still sorts after it, so that
// row stays behind the cursor: paging across a rebuild neither skips nor
// repeats a reservation. A reservation without created_txid, one that
// migration 0047 could not date (its creating event was pruned before it,
// and the read model lacked it or shared its transaction with another
// row), goes first, at ('0', n) in order of creation: a client paging
// past where it stood across the rebuild does not see it again.
func (Reservations) Seed(ctx context.Context, tx pgx.Tx) error {
	if err := db.New(tx).RmReservationSeed(ctx); err != nil {
		return fmt.Errorf("seed rm_reservations: %w", err)
	}
	return nil
}

// ID is the sink id and projection name.
func (Reservations) ID() string { return NameReservations }

// Tables are the tables this projection owns.
func (Reservations) Tables() []string { return []string{"rm_reservations"} }

// Apply writes each reservation event of the batch in tx, in one round
// trip: the writes read nothing back.
func (Reservations) Apply(ctx context.Context, tx pgx.Tx, events []outbox.Stored) error {
	var b pg.Batch
	err := applyEach(events, func(e outbox.Stored) error {
		if !reservationEventTypes[e.Type] {
			return nil
		}
		r, err := decodeReservation(e)
		if err != nil {
			return err
		}
		spec, err := json.Marshal(r.spec())
		if err != nil {
			return fmt.Errorf("encode the request of reservation %s: %w", r.ID, err)
		}
		pg.ExecRows(ctx, &b, (*db.Queries).RmReservationApply, db.RmReservationApplyParams{
			ID: r.ID, TenantID: r.Tenant, State: string(r.State), PoolID: optional(r.PoolID),
			SiteID: optional(r.SiteID), NodeID: optional(r.NodeID), DeviceIds: r.DeviceIDs,
			StartTs: r.Start, EndTs: r.End, Tolerations: r.Tolerations, Conditions: r.Conditions,
			Version: r.Version, Txid: e.Position.TxID, Seq: e.Position.Seq, At: e.Time,
			PriorityClass: r.PriorityClass, Priority: r.Priority, Preemptible: r.Preemptible, Spec: spec,
		}, nil)
		return nil
	})
	if err != nil {
		return err
	}
	if err := b.Send(ctx, tx); err != nil {
		return fmt.Errorf("write reservations: %w", err)
	}
	return nil
}
