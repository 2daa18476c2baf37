package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// Stored is an event as read back from the log: the event and where it sits.
// Position is the cursor a consumer saves after handling it.
type Stored struct {
	core.Event
	Position Position
}

// ReadAfter returns up to limit events strictly after `after`, in (txid, seq)
// order, taking only rows whose transaction is older than every transaction
// still running (the snapshot xmin). A row that commits late is therefore
// never skipped: it stays invisible until everything before it has finished.
//
// q must not be bound to a transaction. The statement runs on its own
// (autocommit), holds no xid, and keeps no snapshot once it returns, so a
// reader never holds the frontier back for other readers. The query is a
// keyset scan on the (txid, seq) index: its cost does not grow with the
// backlog (see docs/decisions/0002-outbox-reader.md).
func ReadAfter(ctx context.Context, q *db.Queries, after Position, limit int) ([]Stored, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("read outbox after %s: limit %d must be positive", after, limit)
	}
	rows, err := q.OutboxReadAfter(ctx, db.OutboxReadAfterParams{
		AfterTxid: after.TxID, AfterSeq: after.Seq, MaxRows: int32(min(limit, 1<<30)),
	})
	if err != nil {
		return nil, fmt.Errorf("read outbox after %s: %w", after, err)
	}
	out := make([]Stored, len(rows))
	for i, r := range rows {
		out[i] = storedFromRow(r)
	}
	return out, nil
}

func storedFromRow(r db.Outbox) Stored {
	var tenant string
	if r.TenantID != nil {
		tenant = *r.TenantID
	}
	return Stored{
		Event: core.Event{
			ID: r.ID, Type: r.Type, TenantID: tenant, Subject: r.Subject, Data: r.Data, Time: r.Time,
		},
		Position: Position{TxID: r.Txid, Seq: r.Seq},
	}
}

// FrontierLag says how far the outbox frontier (pg_snapshot_xmin) is held
// back. The frontier is cluster-wide: any transaction with an xid, in any
// database of the cluster, idle or not, hides every row committed after it
// started. /readyz and the metrics report it so that a stuck transaction is
// found before consumers notice events are late.
type FrontierLag struct {
	// XidsBehind counts the transaction ids assigned since the frontier: 0
	// when no running transaction holds it back.
	XidsBehind int64
	// Age is how long the oldest running transaction with an xid has been
	// open; zero when there is none (or it is not visible to this role).
	Age time.Duration
	// Holder describes that transaction's session: "pid 123 db app (state)".
	Holder string
}

// ReadFrontierLag measures the frontier lag. now is the real wall clock
// (time.Now in production): pg_stat_activity's xact_start is real time, so
// the age is real elapsed time, not business time, and must not be taken
// from compute_now(), which tests and the simulator move by hand. Computing
// the age here keeps real-clock reads out of SQL; the cost is that skew
// between this host and the database host enters the figure, which at NTP
// accuracy is far below the seconds this metric is about.
func ReadFrontierLag(ctx context.Context, q *db.Queries, now func() time.Time) (FrontierLag, error) {
	row, err := q.OutboxFrontierLag(ctx)
	if err != nil {
		return FrontierLag{}, fmt.Errorf("read outbox frontier lag: %w", err)
	}
	lag := FrontierLag{XidsBehind: row.XidsBehind}
	if row.OldestXactStart != nil && row.HolderPid != nil {
		lag.Age = max(now().Sub(*row.OldestXactStart), 0)
		lag.Holder = fmt.Sprintf("pid %d db %s app %q (%s)",
			*row.HolderPid, row.HolderDatabase, row.HolderApplication, row.HolderState)
	}
	return lag, nil
}
