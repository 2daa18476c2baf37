package outbox

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// TxSink is a consumer whose whole effect is in the database: a projection,
// or the webhook scheduler that only inserts delivery rows. Its batch is
// applied in the same transaction that saves its cursor, so the effect
// happens exactly once even though the log is read at least once.
//
// Apply must only use tx (no network I/O: the transaction has an xid and
// holds the outbox frontier back for every reader while it is open). An
// error rolls back both the effect and the cursor.
type TxSink interface {
	// ID names the sink: its outbox_cursors row and its lease.
	ID() string
	Apply(ctx context.Context, tx pgx.Tx, events []Stored) error
}

// Sink is a consumer with effects outside the database (an in-process
// subscriber, a broker). Its batch is delivered outside any transaction and
// the cursor is saved afterwards, so delivery is at least once: after a
// crash or a lost lease the batch is delivered again, and consumers
// deduplicate by event ID.
//
// Deliver returns nil only when every event of the batch was handled; an
// error leaves the cursor where it was. ctx is cancelled when the dispatcher
// loses its lease, so a long delivery stops early.
type Sink interface {
	// ID names the sink: its outbox_cursors row and its lease.
	ID() string
	Deliver(ctx context.Context, events []Stored) error
}

// LeaseName is the singleton lease whose holder delivers sink id.
func LeaseName(sinkID string) string { return "singleton:outbox-dispatch:" + sinkID }
