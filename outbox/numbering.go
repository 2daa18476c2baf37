package outbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/bettercompute/compute/internal/db"
)

// ErrNumberedBehind is CheckNumbering's error: the cluster would number new
// events below the log's.
var ErrNumberedBehind = errors.New("the PostgreSQL cluster's transaction ids are behind this database's event log")

// CheckNumbering makes sure that what the cluster commits from now on sorts
// after everything its logs hold: positions are transaction ids, and
// readers (the sinks behind read models, webhooks and billing; the
// revocation feed every API process tails) only read past their cursors.
//
// A database restored into another cluster (pg_dump, then pg_restore into
// a fresh initdb, as after the loss of the machine) keeps its old
// transaction ids in the outbox, the sinks' cursors and authz_changes,
// while the fresh cluster counts from a few hundred. Its new events would
// then be numbered below the restored ones, where no reader looks: a
// booking answered 201 that no read model ever shows, webhooks and billing
// silent, a revoked token still accepted by the processes that cached it,
// until the counter passes the old ids (for a cluster that ran a while,
// never). Nothing written then can be put right afterwards, so the process
// refuses to start instead, and says how to move the cluster's counter on:
// pg_resetwal's --epoch changes the 64-bit transaction ids (xid8) alone,
// which is all the positions are.
//
// A point-in-time recovery, or a dump restored into the cluster it came
// from, keeps the counter past the log and passes.
func CheckNumbering(ctx context.Context, conn db.DBTX) error {
	row, err := db.New(conn).OutboxNewestTxid(ctx)
	if err != nil {
		return fmt.Errorf("read the newest transaction id of the event log: %w", err)
	}
	if row.NextTxid > row.NewestTxid {
		return nil
	}
	return fmt.Errorf("%w: the log holds transaction id %d and the cluster will assign %d next, so events committed now "+
		"would be numbered below the log's and no reader would see them. This database was restored into another "+
		"cluster (pg_dump, then pg_restore). Stop that PostgreSQL, run `pg_resetwal --epoch=%d -D <its data directory>`, "+
		"start it and start again (docs/operations/deploy.md, Backup and restore)",
		ErrNumberedBehind, row.NewestTxid, row.NextTxid, row.NewestTxid>>32+1)
}
