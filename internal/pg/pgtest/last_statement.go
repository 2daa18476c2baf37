package pgtest

import (
	"context"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// LastStatement is a pgx query tracer that keeps the last statement a pool
// sent whose text starts with Prefix (sqlc's "-- name: Query" line), with
// its arguments, so that a test can run it again under EXPLAIN
// (ExplainExecute).
type LastStatement struct {
	Prefix string

	mu   sync.Mutex
	sql  string
	args []any
}

// Last is the statement kept, and its arguments.
func (l *LastStatement) Last() (string, []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sql, l.args
}

// TraceQueryStart keeps the statement when its text starts with Prefix.
func (l *LastStatement) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(d.SQL, l.Prefix) {
		l.mu.Lock()
		l.sql, l.args = d.SQL, d.Args
		l.mu.Unlock()
	}
	return ctx
}

// TraceQueryEnd does nothing.
func (l *LastStatement) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
