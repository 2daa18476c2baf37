package pg

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/multitracer"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PoolOptions tune the connection pool for how the service uses PostgreSQL.
type PoolOptions struct {
	// MaxConns bounds the pool; 0 keeps pgx's default.
	MaxConns int32
	// IdleInTxTimeout ends sessions left idle inside a transaction: such a
	// transaction holds back pg_snapshot_xmin, and with it every outbox reader.
	IdleInTxTimeout time.Duration
	// PgBouncer avoids named prepared statements, for PgBouncer in
	// transaction pooling mode: statements are described once per connection
	// and run on the unnamed statement (pgx's cache_describe mode), which
	// keeps parameter types — the simple protocol would send jsonb
	// arguments as bytea literals.
	PgBouncer bool
	// ApplicationName shows in pg_stat_activity.
	ApplicationName string
	// Tracer, when set, sees every statement the pool runs (the torture
	// counts deadlocks with one). It is chained behind the tracer that runs
	// the AfterCommit hooks, which sees batches, copies and prepares too
	// and passes them on when Tracer takes them.
	Tracer pgx.QueryTracer
	// NoAfterCommit leaves the AfterCommit hooks out of this pool: its
	// commits announce nothing. For benchmarks that measure what the
	// hooks cost; the service never sets it.
	NoAfterCommit bool
}

// Connect opens a pgx pool on url with the service's session settings.
func Connect(ctx context.Context, url string, opts PoolOptions) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	rp := cfg.ConnConfig.RuntimeParams
	if opts.IdleInTxTimeout > 0 {
		rp["idle_in_transaction_session_timeout"] = fmt.Sprint(opts.IdleInTxTimeout.Milliseconds())
	}
	if opts.ApplicationName != "" {
		rp["application_name"] = opts.ApplicationName
	}
	var ct *commitTracer
	if opts.NoAfterCommit {
		cfg.ConnConfig.Tracer = opts.Tracer
	} else {
		ct = &commitTracer{}
		cfg.ConnConfig.Tracer = ct
		if opts.Tracer != nil {
			cfg.ConnConfig.Tracer = multitracer.New(opts.Tracer, ct)
		}
	}
	if opts.PgBouncer {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if ct != nil {
		ct.pool.Store(pool)
	}
	return pool, nil
}
