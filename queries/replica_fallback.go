// The read models' statements while the replica is in rotation: on the
// standby, and on the primary when the standby fails one.

package queries

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bettercompute/compute/internal/db"
)

// replicaStatementTimeout bounds a statement on the standby: one in
// rotation answers a read-model statement within milliseconds, so one
// that has not within a second is stalled (a frozen server, a hung disk,
// a network that drops packets), and the primary answers instead. It is
// the share of a minPosition wait spent there (DefaultWaitTimeout /
// replicaPatience) too.
const replicaStatementTimeout = time.Second

// replicaDB runs each statement on the replica's standby and, when the
// standby fails it (down, restarting, stalled, or a conflict with its
// recovery), runs it again on the primary, which is ahead of the standby
// and so answers at least as fresh. A standby that lost its connections
// leaves rotation at once, rather than at the next check, so the reads after
// this one go to the primary without trying it; the check puts it back
// once it answers. Without this a standby that goes down between
// two checks fails every read in between (an unexpected EOF, a 500),
// and one that hangs holds every read until its client gives up.
type replicaDB struct {
	r *Replica
}

// DB is the standby as the read models' and the event streams'
// database: each statement on the standby, bounded, and again on the
// primary when the standby fails it (replicaDB). Statements that must
// all read one server (a catch-up page checked against the standby's
// head) use Pool instead.
func (r *Replica) DB() db.DBTX { return replicaDB{r: r} }

func (d replicaDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	sctx, cancel := context.WithTimeout(ctx, replicaStatementTimeout)
	tag, err := d.r.Pool.Exec(sctx, sql, args...)
	cancel()
	if d.fallBack(ctx, err) {
		return d.r.Primary.Exec(ctx, sql, args...)
	}
	return tag, err
}

func (d replicaDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	sctx, cancel := context.WithTimeout(ctx, replicaStatementTimeout)
	rows, err := d.r.Pool.Query(sctx, sql, args...)
	if err == nil {
		return cancelRows{Rows: rows, cancel: cancel}, nil
	}
	cancel()
	if d.fallBack(ctx, err) {
		return d.r.Primary.Query(ctx, sql, args...)
	}
	return rows, err
}

func (d replicaDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return replicaRow{d: d, ctx: ctx, sql: sql, args: args}
}

// replicaRow is QueryRow's answer: the statement runs at Scan, where pgx
// reports its error.
type replicaRow struct {
	d    replicaDB
	ctx  context.Context
	sql  string
	args []any
}

func (r replicaRow) Scan(dest ...any) error {
	sctx, cancel := context.WithTimeout(r.ctx, replicaStatementTimeout)
	err := r.d.r.Pool.QueryRow(sctx, r.sql, r.args...).Scan(dest...)
	cancel()
	if r.d.fallBack(r.ctx, err) {
		return r.d.r.Primary.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...)
	}
	return err
}

// cancelRows ends the statement's timeout when its rows are closed.
type cancelRows struct {
	pgx.Rows
	cancel context.CancelFunc
}

func (r cancelRows) Close() {
	r.Rows.Close()
	r.cancel()
}

// fallBack says whether a statement the standby answered with err runs
// again on the primary: every failure but an empty result (the answer)
// and the request's own end. A failure of the standby rather than of the
// statement (a lost connection, the server shutting down or starting up,
// out of connections) also takes it out of rotation until the next check;
// a statement's own error (a conflict with the standby's recovery, say),
// or no answer within replicaStatementTimeout, does not.
func (d replicaDB) fallBack(ctx context.Context, err error) bool {
	if err == nil || errors.Is(err, pgx.ErrNoRows) || ctx.Err() != nil {
		return false
	}
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err):
		// Slow, not gone: an overloaded standby would otherwise leave and
		// re-enter rotation at every check. One that hangs fails its check.
	case !errors.As(err, &pgErr), // a lost connection
		strings.HasPrefix(pgErr.Code, "08"), strings.HasPrefix(pgErr.Code, "53"), strings.HasPrefix(pgErr.Code, "57P"):
		d.r.lost(err)
	}
	return true
}
