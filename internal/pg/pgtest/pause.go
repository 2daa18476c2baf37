package pgtest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// PauseAfter is a pgx query tracer that holds the first successful run of
// one sqlc statement, once it has run and before its caller sees the
// result, until the test calls Proceed: a command stopped at a point the
// test knows (a row deleted, not yet committed; a row read, not yet
// written), so that another command can be run against it.
type PauseAfter struct {
	prefix  string
	once    sync.Once
	reached chan struct{}
	proceed chan struct{}
}

// NewPauseAfter pauses the statement sqlc names name.
func NewPauseAfter(name string) *PauseAfter {
	return &PauseAfter{prefix: "-- name: " + name + " ", reached: make(chan struct{}), proceed: make(chan struct{})}
}

// Reached is closed when the statement has run and is held.
func (p *PauseAfter) Reached() <-chan struct{} { return p.reached }

// Proceed lets the held statement's caller go on.
func (p *PauseAfter) Proceed() { close(p.proceed) }

type pausedStatement struct{}

// TraceQueryStart marks the context of a run of the statement.
func (p *PauseAfter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, pausedStatement{}, strings.HasPrefix(d.SQL, p.prefix))
}

// TraceQueryEnd holds the first successful run of the statement.
func (p *PauseAfter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if is, _ := ctx.Value(pausedStatement{}).(bool); is && d.Err == nil {
		p.once.Do(func() { close(p.reached); <-p.proceed })
	}
}

// WaitForLockWait polls pg_stat_activity until a backend of this database
// waits on a lock: a signal that a statement is blocked, not a sleep.
func (d *DB) WaitForLockWait(t testing.TB) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		err := d.Pool.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&n)
		return err == nil && n > 0
	}, 10*time.Second, 5*time.Millisecond)
}
