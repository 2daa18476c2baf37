package outbox

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// Append writes events to the outbox inside the caller's transaction (q must
// be bound to it). If that transaction rolls back, the events never existed.
// It returns the position of the last event, which commands hand back to
// their callers for read-your-writes.
func Append(ctx context.Context, q *db.Queries, events ...core.Event) (Position, error) {
	var last Position
	for _, e := range events {
		var tenant *string
		if e.TenantID != "" {
			tenant = &e.TenantID
		}
		row, err := q.OutboxAppend(ctx, db.OutboxAppendParams{
			ID: e.ID, Type: e.Type, TenantID: tenant, Subject: e.Subject, Data: e.Data,
		})
		if err != nil {
			return Position{}, fmt.Errorf("append event %s: %w", e.Type, err)
		}
		last = Position{TxID: row.Txid, Seq: row.Seq}
	}
	return last, nil
}

// AppendIn is Append queued in b, to be sent with the statements around it
// in one round trip (pg.Batch); *pos receives the event's position once the
// caller's transaction has sent b.
func AppendIn(ctx context.Context, b *pg.Batch, e core.Event, pos *Position) {
	var tenant *string
	if e.TenantID != "" {
		tenant = &e.TenantID
	}
	pg.OneTo(ctx, b, (*db.Queries).OutboxAppend, db.OutboxAppendParams{
		ID: e.ID, Type: e.Type, TenantID: tenant, Subject: e.Subject, Data: e.Data,
	}, func(r db.OutboxAppendRow) error {
		*pos = Position{TxID: r.Txid, Seq: r.Seq}
		return nil
	})
}

// AppendAllIn is AppendIn for several events, appended in the order given
// by one statement; pos[i], where not nil, receives events[i]'s position
// once the caller's transaction has sent b. A command that ends with more
// than one event saves a statement per event after the first.
func AppendAllIn(ctx context.Context, b *pg.Batch, events []core.Event, pos []*Position) {
	switch len(events) {
	case 0:
		return
	case 1:
		p := pos[0]
		if p == nil {
			p = new(Position)
		}
		AppendIn(ctx, b, events[0], p)
		return
	}
	arg := db.OutboxAppendManyParams{Ids: make([]uuid.UUID, len(events)), Types: make([]string, len(events)),
		TenantIds: make([]string, len(events)), Subjects: make([]string, len(events)), Data: make([][]byte, len(events))}
	for i, e := range events {
		arg.Ids[i], arg.Types[i], arg.TenantIds[i], arg.Subjects[i], arg.Data[i] = e.ID, e.Type, e.TenantID, e.Subject, e.Data
	}
	pg.ManyTo(ctx, b, (*db.Queries).OutboxAppendMany, arg, func(rows []db.OutboxAppendManyRow) error {
		if len(rows) != len(events) {
			return fmt.Errorf("appended %d of %d events", len(rows), len(events))
		}
		for i, r := range rows {
			if pos[i] != nil {
				*pos[i] = Position{TxID: r.Txid, Seq: r.Seq}
			}
		}
		return nil
	})
}
