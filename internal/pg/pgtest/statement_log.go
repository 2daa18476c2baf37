package pgtest

import (
	"context"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// StatementLog is a pgx query tracer that keeps the first line of every
// statement sent on its own (sqlc puts the query's name there), so a test
// that holds a command to a round-trip budget can say where the round
// trips went when it fails. Hand it to pg.RoundTripTracer as Next.
type StatementLog struct {
	mu    sync.Mutex
	lines []string
}

// TraceQueryStart records the statement's first line.
func (l *StatementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	line, _, _ := strings.Cut(strings.TrimSpace(d.SQL), "\n")
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	return ctx
}

// TraceQueryEnd does nothing.
func (l *StatementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Take returns the lines recorded since the last Take, one per line, and
// forgets them.
func (l *StatementLog) Take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := strings.Join(l.lines, "\n")
	l.lines = nil
	return out
}
