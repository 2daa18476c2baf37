// Whether the stream is the log's: the stream's last message must be an
// event of the database's log, else the database was restored to an
// earlier point (or the stream is another installation's).

package natsink

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
)

// ErrStreamAheadOfLog is the forwarder's refusal to publish to a stream
// whose last message is no event of the database's log. After the
// database is restored to an earlier point the stream still holds the
// events written after that point, which the restored log lost, and the
// log's new events are numbered among them (a point-in-time recovery
// reuses their transaction ids) or above them (a dump restored into the
// same cluster). Forwarding on would skip every new event at or before
// the stream's last position (the forwarder takes those as published)
// and put the rest after events that no longer happened. Nothing is
// forwarded until the stream is purged or deleted; the forwarder checks
// again at every retry and goes on by itself once it is.
var ErrStreamAheadOfLog = errors.New("the JetStream stream holds events this database's log does not have")

// lastMessage is the stream's last message as the forwarder sees it: the
// event it carries, with its outbox position; zero for an empty stream or
// a last message that is gone or not the sink's.
type lastMessage struct {
	seq uint64
	id  uuid.UUID
	pos outbox.Position
}

// checkInLog returns ErrStreamAheadOfLog, with what to do, when last is
// not an event of the log: no event has its id, or the event that has it
// sits elsewhere in the log. An event that is gone because retention
// pruned it (older than the oldest retained event) passes: the log no
// longer says, and retention never prunes past the sink's own cursor.
func checkInLog(ctx context.Context, q *db.Queries, stream string, last lastMessage) error {
	if last.pos.IsZero() {
		return nil
	}
	row, err := q.OutboxGet(ctx, last.id)
	switch {
	case err == nil:
		if (outbox.Position{TxID: row.Txid, Seq: row.Seq}) == last.pos {
			return nil
		}
	case errors.Is(err, pgx.ErrNoRows):
		oldest, err := q.OutboxOldestPosition(ctx, db.OutboxOldestPositionParams{AtTxid: last.pos.TxID, AtSeq: last.pos.Seq})
		if err != nil {
			return fmt.Errorf("read oldest event position: %w", err)
		}
		if len(oldest) > 0 && last.pos.Less(outbox.Position{TxID: oldest[0].Txid, Seq: oldest[0].Seq}) {
			return nil // pruned
		}
	default:
		return fmt.Errorf("read event %s of stream %s: %w", last.id, stream, err)
	}
	return fmt.Errorf("%w: its last message (sequence %d, event %s at position %s) is no event of the log. "+
		"The database was restored to an earlier point, or the stream is another installation's. "+
		"Nothing is forwarded until the stream is purged (`nats stream purge %s`) or deleted; "+
		"its consumers must drop what they derived from the events after the restore point "+
		"(docs/operations/deploy.md, Backup and restore)", ErrStreamAheadOfLog, last.seq, last.id, last.pos, stream)
}
