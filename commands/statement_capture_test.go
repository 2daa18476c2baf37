package commands_test

import (
	"context"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg"
)

// statementCapture keeps the last run of every named statement a pool
// sent, with its arguments, from a batch or on its own.
type statementCapture struct {
	mu   sync.Mutex
	runs map[string]capturedStatement
}

type capturedStatement struct {
	sql  string
	args []any
}

var statementName = regexp.MustCompile(`^-- name: (\w+)`)

func newStatementCapture() *statementCapture {
	return &statementCapture{runs: map[string]capturedStatement{}}
}

// last is the text and arguments of the last run of the statement name.
func (c *statementCapture) last(name string) (string, []any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.runs[name]
	return r.sql, r.args
}

func (c *statementCapture) keep(sql string, args []any) {
	if m := statementName.FindStringSubmatch(sql); m != nil {
		c.mu.Lock()
		c.runs[m[1]] = capturedStatement{sql: sql, args: args}
		c.mu.Unlock()
	}
}

func (c *statementCapture) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.keep(d.SQL, d.Args)
	return ctx
}
func (c *statementCapture) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *statementCapture) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *statementCapture) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.keep(d.SQL, d.Args)
}
func (c *statementCapture) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// preparedPool is a pool of maxConns connections to url whose statements
// are prepared by name, so that each connection caches their plans, as in
// production without PgBouncer. Through PgBouncer (cache_describe)
// statements run unnamed and are planned at every run: there is no plan
// cache to test, and the test is skipped.
func preparedPool(t *testing.T, url string, maxConns int32, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	pool, err := pg.Connect(context.Background(), url, pg.PoolOptions{MaxConns: maxConns,
		IdleInTxTimeout: time.Minute, Tracer: tracer})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	if mode := pool.Config().ConnConfig.DefaultQueryExecMode; mode != pgx.QueryExecModeCacheStatement {
		t.Skipf("statements are not prepared by name (query exec mode %v)", mode)
	}
	return pool
}
