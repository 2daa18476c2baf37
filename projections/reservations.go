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
// It is not a Seeder: a row's place in the list, and in its cursors, is
// the position of the reservation's creating event, which only the log
// holds, so a rebuild replays the retained log alone
// (docs/concepts/retention.md).
type Reservations struct{}

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
