package pg

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/internal/db"
)

// Batch collects statements of the generated queries (internal/db) and
// sends them to PostgreSQL in one round trip: pgx sends a batch as one
// pipeline, and PostgreSQL runs its statements in order, each seeing the
// ones before it, exactly as if they had been sent one by one in the same
// transaction. What changes is only when the caller sees the results: all
// at once, after Send. So a batch holds statements whose inputs are known
// before it is sent; a statement that would be skipped after an earlier
// one's result runs anyway, which is harmless only when the caller then
// rolls back (to a savepoint or the whole transaction) on that result.
//
// A statement is queued by naming the generated query and its argument,
// pg.One(ctx, b, (*db.Queries).NodeDesiredBump, nodeID, &generation, nil),
// so a batched step reads like the call it is. The SQL is the generated
// query's own: the method runs against a recorder that keeps the statement
// and its arguments instead of running them, so sql/queries stays the one
// place the SQL lives.
type Batch struct {
	pgx.Batch
}

// errRecorded is what a query method returns when run against recorder.
var errRecorded = errors.New("statement recorded for a batch")

// recorder is a db.DBTX that records the one statement a query method runs.
type recorder struct {
	sql  string
	args []any
	n    int
}

func (r *recorder) record(sql string, args []any) {
	r.sql, r.args = sql, args
	r.n++
}

func (r *recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.record(sql, args)
	return pgconn.CommandTag{}, errRecorded
}

func (r *recorder) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.record(sql, args)
	return nil, errRecorded
}

func (r *recorder) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	r.record(sql, args)
	return recordedRow{}
}

type recordedRow struct{}

func (recordedRow) Scan(...any) error { return errRecorded }

// queue records the one statement run(q) runs against a recorder and
// queues it.
func (b *Batch) queue(run func(q *db.Queries) error) *pgx.QueuedQuery {
	var r recorder
	if err := run(db.New(&r)); !errors.Is(err, errRecorded) || r.n != 1 {
		panic(fmt.Sprintf("pg.Batch: a queued query must run exactly one statement (ran %d, %v)", r.n, err))
	}
	return b.Queue(r.sql, r.args...)
}

// queueQuery queues query(ctx, arg), whatever it returns.
func queueQuery[P, R any](ctx context.Context, b *Batch, query func(*db.Queries, context.Context, P) (R, error), arg P) *pgx.QueuedQuery {
	return b.queue(func(q *db.Queries) error {
		_, err := query(q, ctx, arg)
		return err
	})
}

// The queueing functions take a generated query by its method expression,
// (*db.Queries).NodeDesiredBump, and its argument, so that a batched
// statement reads like the call it is; the SQL and arguments are the
// generated method's own. The results reach dst (or rows) once the batch
// is sent.

// Exec queues query(ctx, arg), an :exec statement.
func Exec[P any](ctx context.Context, b *Batch, query func(*db.Queries, context.Context, P) error, arg P) {
	b.queue(func(q *db.Queries) error { return query(q, ctx, arg) }).Exec(func(pgconn.CommandTag) error { return nil })
}

// ExecRows queues query(ctx, arg) for its effect: an :execrows statement,
// or a :one or :many one whose rows nobody reads (a lock, an insert whose
// row the caller already knows). The rows it affected or returned go to
// rows unless rows is nil.
func ExecRows[P, R any](ctx context.Context, b *Batch, query func(*db.Queries, context.Context, P) (R, error), arg P, rows *int64) {
	queueQuery(ctx, b, query, arg).Exec(func(ct pgconn.CommandTag) error {
		if rows != nil {
			*rows = ct.RowsAffected()
		}
		return nil
	})
}

// Statement queues a plain statement of transaction control (SAVEPOINT,
// RELEASE SAVEPOINT, ROLLBACK TO SAVEPOINT, SET LOCAL), which has no
// generated query.
func (b *Batch) Statement(sql string) {
	b.Queue(sql).Exec(func(pgconn.CommandTag) error { return nil })
}

// One queues query(ctx, arg), a :one statement, whose row goes to dst. With
// found nil, no row fails the batch with pgx.ErrNoRows; otherwise *found
// says whether there was one.
func One[P, R any](ctx context.Context, b *Batch, query func(*db.Queries, context.Context, P) (R, error), arg P, dst *R, found *bool) {
	scan := scannerOf[R]()
	queueQuery(ctx, b, query, arg).Query(func(rows pgx.Rows) error {
		v, err := pgx.CollectExactlyOneRow(rows, scan)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && found != nil:
			*found = false
			return nil
		case err != nil:
			return err
		}
		if found != nil {
			*found = true
		}
		*dst = v
		return nil
	})
}

// OneTo queues query(ctx, arg), a :one statement, and hands its row to
// use; no row fails the batch with pgx.ErrNoRows.
func OneTo[P, R any](ctx context.Context, b *Batch, query func(*db.Queries, context.Context, P) (R, error), arg P, use func(R) error) {
	scan := scannerOf[R]()
	queueQuery(ctx, b, query, arg).Query(func(rows pgx.Rows) error {
		v, err := pgx.CollectExactlyOneRow(rows, scan)
		if err != nil {
			return err
		}
		return use(v)
	})
}

// Many queues query(ctx, arg), a :many statement, whose rows go to dst.
func Many[P, R any](ctx context.Context, b *Batch, query func(*db.Queries, context.Context, P) ([]R, error), arg P, dst *[]R) {
	scan := scannerOf[R]()
	queueQuery(ctx, b, query, arg).Query(func(rows pgx.Rows) error {
		v, err := pgx.CollectRows(rows, scan)
		if err != nil {
			return err
		}
		*dst = v
		return nil
	})
}

// ManyTo queues query(ctx, arg), a :many statement, and hands its rows to
// use once the batch is sent; an error from use fails the batch.
func ManyTo[P, R any](ctx context.Context, b *Batch, query func(*db.Queries, context.Context, P) ([]R, error), arg P, use func([]R) error) {
	scan := scannerOf[R]()
	queueQuery(ctx, b, query, arg).Query(func(rows pgx.Rows) error {
		v, err := pgx.CollectRows(rows, scan)
		if err != nil {
			return err
		}
		return use(v)
	})
}

// scannerOf scans a row as the generated method would: into a row struct
// of internal/db field by field in column order, else one column into R.
func scannerOf[R any]() pgx.RowToFunc[R] {
	if t := reflect.TypeFor[R](); t.Kind() == reflect.Struct && t.PkgPath() == dbPackage {
		return pgx.RowToStructByPos[R]
	}
	return pgx.RowTo[R]
}

// dbPackage is the import path of the generated queries, whose row structs
// scannerOf scans field by field.
var dbPackage = reflect.TypeFor[db.Queries]().PkgPath()

// Send sends the batch on tx (a transaction or a savepoint) and runs the
// queued callbacks in order. The first statement that fails ends the batch:
// PostgreSQL skips the rest, the transaction is aborted, and that error is
// returned. An empty batch sends nothing.
func (b *Batch) Send(ctx context.Context, tx pgx.Tx) error {
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, &b.Batch).Close()
}

// Commit queues the COMMIT of the transaction the batch is sent in, as
// its last statement, so that a command's last writes and its commit cost
// one round trip. Only a batch whose results need no check in Go may end
// so: by the time they are read the transaction has committed. Such a
// batch makes every refusal an error of its statement (a constraint, a
// guarded insert without ON CONFLICT), which aborts the transaction and
// turns the COMMIT into a rollback. InTxBatch sees the transaction ended
// and sends no COMMIT of its own.
func (b *Batch) Commit() {
	b.Statement("commit")
}

// InTxBatch is InTx with the transaction's BEGIN sent together with the
// statements first queues, so that a command's first statements cost no
// round trip of their own. first fills the results of those statements
// (through the callbacks it registers) before fn runs; both run again when
// the transaction is retried, so first must queue afresh each time. fn may
// end the transaction itself with a batch that ends in Commit.
func InTxBatch(ctx context.Context, pool *pgxpool.Pool, first func(b *Batch), fn func(tx pgx.Tx) error) error {
	if txTracking.Load() {
		leave := enterTx()
		defer leave()
	}
	var err error
	for attempt := 1; attempt <= maxTxAttempts; attempt++ {
		err = runTxBatch(ctx, pool, first, fn)
		if err == nil || !IsRetryable(err) {
			return err
		}
	}
	return fmt.Errorf("after %d attempts: %w", maxTxAttempts, err)
}

// runTxBatch runs one attempt on a connection of its own, released at the
// end: the transaction is pgx's, on that connection (not the pool's
// wrapper, which would send a COMMIT or ROLLBACK of its own to give the
// connection back), so that a transaction fn committed in its last batch
// ends with no further round trip. A connection left in a transaction
// (a rollback that failed) is closed by the pool on release.
func runTxBatch(ctx context.Context, pool *pgxpool.Pool, first func(b *Batch), fn func(tx pgx.Tx) error) (err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var b Batch
	b.BeginTx(pgx.TxOptions{})
	first(&b)
	br := conn.SendBatch(ctx, &b.Batch)
	tx := br.Tx()
	err = br.Close()
	if tx == nil {
		if err == nil {
			err = errors.New("pg: the first batch began no transaction")
		}
		return err
	}
	idle := func() bool { return conn.Conn().PgConn().TxStatus() == 'I' }
	defer func() {
		if err != nil && !idle() {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err != nil {
		return err
	}
	if err = fn(tx); err != nil {
		return err
	}
	if idle() { // fn's last batch committed
		return nil
	}
	return tx.Commit(ctx)
}
