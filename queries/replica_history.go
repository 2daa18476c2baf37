// Whether the standby copies the primary's history: a standby left behind
// by a restore of its primary, or by a failover to another standby, is
// still a hot standby, and ahead of the primary, so no lag tells it apart.

package queries

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
)

// errOtherHistory is a check's refusal of a standby whose newest event is
// no event of the primary's log. Such a standby replayed writes the
// primary does not have: the primary was restored to an earlier point (or
// another standby was promoted in its place, without all that this one
// replayed) and this one kept the old history, which it can no longer
// leave. Its WAL position is ahead of the primary's, so its lag reads 0
// until the primary has written as much again; in rotation it would show
// reservations that no longer exist, and pass a minPosition of the new
// history (whose transaction ids the old one used too) on a read model of
// the old. It stays out of rotation until it is made again from the
// primary.
var errOtherHistory = errors.New("the read database holds events the primary does not have")

// checkHistory returns errOtherHistory when the standby's newest event is
// not in the primary's log at its position. One the primary has pruned
// (older than its oldest retained event) passes: the primary no longer
// says, and a standby that far behind is out by its lag anyway.
func (r *Replica) checkHistory(ctx context.Context) error {
	newest, err := db.New(r.Pool).ReplicaNewestEvent(ctx)
	if err != nil {
		return fmt.Errorf("standby newest event: %w", err)
	}
	if len(newest) == 0 {
		return nil
	}
	ev := newest[0]
	pos := outbox.Position{TxID: ev.Txid, Seq: ev.Seq}
	q := db.New(r.Primary)
	row, err := q.OutboxGet(ctx, ev.ID)
	switch {
	case err == nil:
		if (outbox.Position{TxID: row.Txid, Seq: row.Seq}) == pos {
			return nil
		}
	case errors.Is(err, pgx.ErrNoRows):
		oldest, err := q.OutboxOldestPosition(ctx, db.OutboxOldestPositionParams{AtTxid: pos.TxID, AtSeq: pos.Seq})
		if err != nil {
			return fmt.Errorf("primary oldest event position: %w", err)
		}
		if len(oldest) == 0 || pos.Less(outbox.Position{TxID: oldest[0].Txid, Seq: oldest[0].Seq}) {
			return nil // pruned on the primary
		}
	default:
		return fmt.Errorf("primary event %s: %w", ev.ID, err)
	}
	return fmt.Errorf("%w: its newest event (%s at position %s) is no event of the primary's log. "+
		"The primary was restored to an earlier point, or another standby was promoted in its place; "+
		"make this standby again from the primary (pg_basebackup), or point COMPUTE_READ_DATABASE_URL at one of it",
		errOtherHistory, ev.ID, pos)
}
