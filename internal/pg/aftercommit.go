package pg

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// After-commit hooks: something to do once a transaction that ran a given
// generated query has committed (the outbox announces appends this way,
// outside the appending transaction).
//
// Every pool Connect opens carries a pgx tracer that watches the statements
// its connections run, and so sees every path to the database alike:
// InTx, InTxBatch, pgx.BeginFunc, a pg.Batch, or a statement outside any
// transaction. A generated query is recognised by the "-- name: X" comment
// sqlc puts first in its SQL. When a watched statement succeeds, its
// connection is marked (PgConn.CustomData, so the mark lives and dies with
// the connection); when the connection then leaves its transaction (the
// server reports it idle after the statement or batch), the mark is
// cleared and, if that ending was a commit, the hooks run with the pool.
// A commit is a COMMIT that answered COMMIT, or a watched statement or
// batch that succeeded outside an explicit transaction (autocommit); a
// ROLLBACK, a COMMIT answered ROLLBACK (the transaction had failed) or a
// failed COMMIT is not. The tracer adds no statement and no round trip.
//
// The rule errs towards running the hooks, never against: a watched
// statement undone by ROLLBACK TO SAVEPOINT still counts when the
// transaction commits, and so does a batch that ends in its own ROLLBACK.
// A connection lost while committing is in doubt: the hooks run.

// afterCommitHook is one registration of AfterCommit.
type afterCommitHook struct {
	prefix string // "-- name: X " as sqlc writes it
	fn     func(*pgxpool.Pool)
}

var (
	hooksMu sync.Mutex
	hooks   atomic.Pointer[[]afterCommitHook] // copy on write; index = mark bit
)

// maxHooks bounds the registrations: a connection's marks are one uint64.
const maxHooks = 64

// AfterCommit registers, for the whole process, fn to run after every
// transaction that ran the generated query named statement (its sqlc name,
// e.g. "OutboxAppend") commits on any pool opened by Connect, with that
// pool. fn runs on the goroutine that committed, right after the COMMIT
// returned and before the caller sees it: it must not block or touch the
// database itself (hand the work to a goroutine). Register from an init
// function or before opening pools; registrations are never removed.
func AfterCommit(statement string, fn func(*pgxpool.Pool)) {
	hooksMu.Lock()
	defer hooksMu.Unlock()
	var old []afterCommitHook
	if p := hooks.Load(); p != nil {
		old = *p
	}
	if len(old) == maxHooks {
		panic("pg.AfterCommit: too many hooks")
	}
	next := append(append([]afterCommitHook(nil), old...), afterCommitHook{prefix: "-- name: " + statement + " ", fn: fn})
	hooks.Store(&next)
}

// watchedBits says which hooks watch sql (0: none).
func watchedBits(sql string) uint64 {
	if !strings.HasPrefix(sql, "-- name: ") {
		return 0
	}
	p := hooks.Load()
	if p == nil {
		return 0
	}
	var bits uint64
	for i, h := range *p {
		if strings.HasPrefix(sql, h.prefix) {
			bits |= 1 << i
		}
	}
	return bits
}

// marksKey is the CustomData key of a connection's pending marks.
const marksKey = "pg.aftercommit"

// commitTracer is the tracer Connect installs: it marks connections and
// runs the hooks. Connect combines it with PoolOptions.Tracer through
// pgx's multitracer, which passes every trace on to both.
type commitTracer struct {
	pool atomic.Pointer[pgxpool.Pool]
}

var (
	_ pgx.QueryTracer = (*commitTracer)(nil)
	_ pgx.BatchTracer = (*commitTracer)(nil)
)

// watchedKey carries, from TraceQueryStart to TraceQueryEnd, the bits of
// the hooks watching the statement.
type watchedKey struct{}

func marks(conn *pgx.Conn) uint64 {
	m, _ := conn.PgConn().CustomData()[marksKey].(uint64)
	return m
}

func setMarks(conn *pgx.Conn, m uint64) {
	cd := conn.PgConn().CustomData()
	if m == 0 {
		delete(cd, marksKey)
		return
	}
	cd[marksKey] = m
}

// ended looks at conn after a statement or batch finished with tag and
// err: if conn is marked and out of its transaction, it clears the marks
// and runs their hooks when the transaction committed.
func (t *commitTracer) ended(conn *pgx.Conn, tag pgconn.CommandTag, err error) {
	m := marks(conn)
	if m == 0 {
		return
	}
	pc := conn.PgConn()
	committed := false
	switch {
	case err != nil && pc.IsClosed():
		committed = true // lost mid-commit, perhaps: in doubt, announce
	case pc.TxStatus() != 'I':
		return // still inside the transaction (or a failed one)
	case err == nil:
		committed = tag.String() != "ROLLBACK"
	}
	setMarks(conn, 0)
	if !committed {
		return
	}
	pool := t.pool.Load()
	if pool == nil {
		return
	}
	for i, h := range *hooks.Load() {
		if m&(1<<i) != 0 {
			h.fn(pool)
		}
	}
}

// TraceQueryStart notes whether the statement is watched.
func (t *commitTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if bits := watchedBits(data.SQL); bits != 0 {
		ctx = context.WithValue(ctx, watchedKey{}, bits)
	}
	return ctx
}

// TraceQueryEnd marks the connection after a watched statement succeeded,
// and runs the hooks if the transaction is over and committed.
func (t *commitTracer) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	if bits, _ := ctx.Value(watchedKey{}).(uint64); bits != 0 && data.Err == nil {
		setMarks(conn, marks(conn)|bits)
	}
	t.ended(conn, data.CommandTag, data.Err)
}

// TraceBatchStart does nothing: the batch's statements are looked at one
// by one.
func (t *commitTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

// TraceBatchQuery marks the connection after a watched statement of the
// batch succeeded.
func (t *commitTracer) TraceBatchQuery(_ context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	if data.Err == nil {
		if bits := watchedBits(data.SQL); bits != 0 {
			setMarks(conn, marks(conn)|bits)
		}
	}
}

// TraceBatchEnd runs the hooks if the batch left the connection out of a
// committed transaction (a batch sent outside one runs in an implicit
// transaction of its own).
func (t *commitTracer) TraceBatchEnd(_ context.Context, conn *pgx.Conn, data pgx.TraceBatchEndData) {
	t.ended(conn, pgconn.CommandTag{}, data.Err)
}
