// Package projections keeps the read models (the rm_* tables) in step with
// the event log. Each projection is an outbox.TxSink: the dispatcher applies
// a batch in the transaction that saves the projection's cursor, so its
// effect is exactly once. On top of that every statement is guarded by the
// aggregate's version carried in each event ("version" in its data), so
// applying an event that is already reflected changes nothing: a replayed
// batch, or a batch raced by a rebuild, is harmless.
//
// A projection reads only its events, never the write tables, with
// documented exceptions: the fleet projection reads a reservation's
// immutable scalar request, which reservation events written before they
// carried it lack, and usage-windows the allocation of a reservation whose
// booking is no longer in the log. Rebuild fills fresh tables, from the
// write model first where the projection is a Seeder, then by replaying
// the retained log, and swaps them in.
package projections

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/outbox"
)

// Projection names: each is the sink id (its outbox_cursors row and its
// lease singleton:outbox-dispatch:<name>) and the NAME of
// `compute projections rebuild NAME`.
const (
	NameReservations  = "reservations"
	NameFleet         = "fleet"
	NameDeviceHolders = "device-holders"
	NameUsageWindows  = "usage-windows"
)

// Projection is a read model: a sink of the log that owns some rm_* tables.
type Projection interface {
	outbox.TxSink
	// Tables lists the rm_* tables the projection writes, and only it. A
	// rebuild recreates exactly these.
	Tables() []string
}

// Seeder is a projection whose rows the write model can say: a rebuild
// calls Seed on the fresh tables first, then replays the retained log on
// top. Seed writes each row as the aggregate's events up to its current
// version would have left it, at that version; the version guards then
// make every replayed event at or below it change nothing and apply every
// newer one, so a rebuild of a whole log gives what the live projection
// has, and one of a pruned log still has what the pruned events wrote.
// It runs in the rebuild's first transaction, with unqualified rm_* names
// resolving to the fresh tables (RmRebuildUseShadow).
type Seeder interface {
	Seed(ctx context.Context, tx pgx.Tx) error
}

// All returns every projection, for main to run through outbox.NewTxGroup
// (one cursor and one lease per projection, one transaction per batch for
// all of them).
func All() []Projection {
	return []Projection{Reservations{}, Fleet{}, DeviceHolders{}, UsageWindows{}}
}

// ByName returns the projection called name.
func ByName(name string) (Projection, error) {
	for _, p := range All() {
		if p.ID() == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no projection named %q (known: %s, %s, %s, %s)", name,
		NameReservations, NameFleet, NameDeviceHolders, NameUsageWindows)
}

// applyEach runs apply for every event of the batch, naming the event that
// failed. A projection skips event types it does not follow.
func applyEach(events []outbox.Stored, apply func(e outbox.Stored) error) error {
	for _, e := range events {
		if err := apply(e); err != nil {
			return fmt.Errorf("apply %s %s at %s: %w", e.Type, e.ID, e.Position, err)
		}
	}
	return nil
}

// decode unmarshals an event's data.
func decode[T any](e outbox.Stored) (T, error) {
	var v T
	if err := json.Unmarshal(e.Data, &v); err != nil {
		return v, fmt.Errorf("decode data of %s: %w", e.Type, err)
	}
	return v, nil
}
