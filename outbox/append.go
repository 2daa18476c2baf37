package outbox

import (
	"context"
	"fmt"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
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
