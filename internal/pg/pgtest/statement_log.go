package pgtest

import (
	"context"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// StatementLog is a pgx query and batch tracer that keeps the first line of
// every statement (sqlc puts the query's name there), a batch's statements
// indented under a "batch" line, so a test that holds a command to a
// round-trip budget can say where the round trips went when it fails. Hand
// it to pg.RoundTripTracer as Next.
type StatementLog struct {
	mu    sync.Mutex
	lines []string
}

// TraceQueryStart records the statement's first line.
func (l *StatementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	line, _, _ := strings.Cut(strings.TrimSpace(d.SQL), "\n")
	l.add(line)
	return ctx
}

// TraceQueryEnd does nothing.
func (l *StatementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart records the start of one round trip of several statements.
func (l *StatementLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	l.add("batch")
	return ctx
}

// TraceBatchQuery records a statement of the batch, indented.
func (l *StatementLog) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	line, _, _ := strings.Cut(strings.TrimSpace(d.SQL), "\n")
	l.add("  " + line)
}

// TraceBatchEnd does nothing.
func (l *StatementLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (l *StatementLog) add(line string) {
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
}

// Take returns the lines recorded since the last Take, one per line, and
// forgets them.
func (l *StatementLog) Take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := strings.Join(l.lines, "\n")
	l.lines = nil
	return out
}
