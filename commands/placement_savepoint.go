package commands

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/pg"
)

// savepointName names the savepoint placement attempts run under.
const savepointName = "placement"

// savepoint is the state of the placement's savepoint: set with the first
// attempt's statements, rolled back to with the next attempt's when the
// last one failed. Both travel in the attempt's first batch, so a replan
// costs no round trip of its own, unless the attempt failed with an error
// (rollBackNow).
type savepoint struct{ open, dirty bool }

// begin queues what the next attempt needs first.
func (s *savepoint) begin(b *pg.Batch) {
	switch {
	case !s.open:
		b.Statement("SAVEPOINT " + savepointName)
		s.open = true
	case s.dirty:
		b.Statement("ROLLBACK TO SAVEPOINT " + savepointName)
		s.dirty = false
	}
}

// rollBackNow rolls back to the savepoint at once, after an attempt's
// statement failed for a lost race (a deadlock, a serialization failure,
// the exclusion constraint): the error has aborted the transaction, and
// the next attempt may have statements to prepare (after a first attempt
// from the candidates' list, DeviceFreeAtoms), which an aborted
// transaction refuses. The next attempt's own rollback to it is then a
// no-op.
func (s *savepoint) rollBackNow(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT "+savepointName)
	return pg.Translate(err, "placement savepoint")
}
