package torture

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bettercompute/compute/internal/pg"
)

// deadlockTracer counts the statements PostgreSQL aborted as deadlocked, by
// the torture operation that ran them. The transaction helper retries a
// deadlocked transaction and the placer rolls back to its savepoint, so a
// deadlock never reaches the caller: only a tracer on the pool sees it.
type deadlockTracer struct {
	mu    sync.Mutex
	count map[string]int
	// samples keeps PostgreSQL's account of the first few deadlocks (which
	// processes waited for which locks, in which statements), to fix them.
	samples []string
}

// maxSamples bounds the deadlock accounts kept.
const maxSamples = 5

func newDeadlockTracer() *deadlockTracer { return &deadlockTracer{count: map[string]int{}} }

// opKey carries the torture operation's kind in the context of its calls.
type opKey struct{}

// withOp names the operation whose statements run under ctx.
func withOp(ctx context.Context, kind string) context.Context {
	return context.WithValue(ctx, opKey{}, kind)
}

// sqlKey carries a statement's text from its start to its end.
type sqlKey struct{}

func (t *deadlockTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, sqlKey{}, data.SQL)
}

func (t *deadlockTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	t.record(ctx, sqlOf(ctx), data.Err)
}

// The batch side: the write path sends most of a command's statements in
// batches, and a deadlock there is reported on the statement that hit it.

func (t *deadlockTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (t *deadlockTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	t.record(ctx, data.SQL, data.Err)
}

func (t *deadlockTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// record counts err when it is a deadlock, under the operation of ctx.
func (t *deadlockTracer) record(ctx context.Context, sql string, err error) {
	var pgErr *pgconn.PgError
	if !pg.IsDeadlock(err) || !errors.As(err, &pgErr) { // pgErr for its Detail
		return
	}
	kind, _ := ctx.Value(opKey{}).(string)
	if kind == "" {
		kind = "other"
	}
	t.mu.Lock()
	t.count[kind]++
	if len(t.samples) < maxSamples {
		t.samples = append(t.samples, kind+": "+firstLine(sql)+"\n"+pgErr.Detail)
	}
	t.mu.Unlock()
}

// snapshot copies the counts.
func (t *deadlockTracer) snapshot() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.count))
	for k, v := range t.count {
		out[k] = v
	}
	return out
}

// firstLine is a statement's first line: sqlc puts the query's name there.
func firstLine(sql string) string {
	if i := strings.IndexByte(sql, '\n'); i >= 0 {
		return sql[:i]
	}
	return sql
}

func sqlOf(ctx context.Context) string { s, _ := ctx.Value(sqlKey{}).(string); return s }
