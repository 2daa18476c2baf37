package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// CursorOf returns the position after which sink sinkID has not delivered.
// A sink without a row in outbox_cursors starts at the beginning of the log.
// Queries use it to wait until a projection has passed a command's position.
func CursorOf(ctx context.Context, q *db.Queries, sinkID string) (Position, error) {
	row, err := q.OutboxCursorGet(ctx, sinkID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Position{}, nil
	}
	if err != nil {
		return Position{}, fmt.Errorf("read cursor of sink %s: %w", sinkID, err)
	}
	return Position{TxID: row.Txid, Seq: row.Seq}, nil
}

// queueCursorSave queues, in b, the record that sinkID has handled
// everything up to p. Callers send it in a transaction fenced by the
// sink's lease.
func queueCursorSave(ctx context.Context, b *pg.Batch, sinkID string, p Position) {
	pg.Exec(ctx, b, (*db.Queries).OutboxCursorSave, db.OutboxCursorSaveParams{Sink: sinkID, Txid: p.TxID, Seq: p.Seq})
}
