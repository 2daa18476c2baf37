// Package config is the one place the service reads its environment: a
// single envconfig struct, parsed in main and passed down explicitly.
package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/kelseyhightower/envconfig"
)

// Prefix is the environment prefix of every setting (COMPUTE_ADDR, …).
const Prefix = "COMPUTE"

// Config is every setting of `compute`. docs/configuration.md lists them;
// keep the two in step.
type Config struct {
	// DatabaseURL is the PostgreSQL to use. Read from COMPUTE_DATABASE_URL or
	// DATABASE_URL; when both are unset, serve starts a private cluster in PGDir.
	DatabaseURL string `envconfig:"DATABASE_URL"`
	// PGDir is where the private cluster lives when no DatabaseURL is set.
	PGDir string `envconfig:"PG_DIR" default:".compute/pg"`
	// Addr is the HTTP listen address.
	Addr string `envconfig:"ADDR" default:":8080"`
	// Roles this process plays: api, worker, dispatcher, gateway.
	Roles []string `envconfig:"ROLES" default:"api,worker,dispatcher,gateway"`
	// GatewayAddr is where the gateway role listens for node daemons.
	GatewayAddr string `envconfig:"GATEWAY_ADDR" default:":8081"`
	// GatewayID names this gateway (its lease is gateway:<id>); empty means
	// the host name. Keep it stable across restarts of one gateway.
	GatewayID string `envconfig:"GATEWAY_ID"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `envconfig:"LOG_LEVEL" default:"info"`
	// BodyLimit caps request bodies (echo syntax: 1M, 512K).
	BodyLimit string `envconfig:"BODY_LIMIT" default:"1M"`
	// MaxConns bounds the database pool.
	MaxConns int32 `envconfig:"MAX_CONNS" default:"20"`
	// BackgroundMaxConns bounds the separate pool of the worker,
	// dispatcher and gateway roles in a process that also serves the API,
	// so that API load queues for its own connections instead of starving
	// webhook delivery, projections and node sessions. A process without
	// the api role has one pool of MaxConns.
	BackgroundMaxConns int32 `envconfig:"BACKGROUND_MAX_CONNS" default:"10"`
	// IdleInTxTimeout ends sessions idle inside a transaction, which would
	// otherwise hold the outbox frontier back for every reader.
	IdleInTxTimeout time.Duration `envconfig:"IDLE_IN_TX_TIMEOUT" default:"30s"`
	// PgBouncer avoids named prepared statements (pgx cache_describe mode)
	// and LISTEN, for PgBouncer in transaction pooling mode.
	PgBouncer bool `envconfig:"PGBOUNCER" default:"false"`
	// TokenCacheTTL is how long an authenticated token is reused.
	TokenCacheTTL time.Duration `envconfig:"TOKEN_CACHE_TTL" default:"30s"`
	// IdempotencyTTL is how long idempotency keys are kept.
	IdempotencyTTL time.Duration `envconfig:"IDEMPOTENCY_TTL" default:"24h"`
	// PollInterval is how often loops poll when no poke arrives.
	PollInterval time.Duration `envconfig:"POLL_INTERVAL" default:"1s"`
	// ListenURL is a direct (not pooled) connection for LISTEN/NOTIFY pokes.
	// Empty means DatabaseURL; "off" disables pokes (PgBouncer in transaction
	// mode cannot LISTEN), leaving polling alone.
	ListenURL string `envconfig:"LISTEN_URL"`
	// WebhookAllowPrivate lets webhook deliveries reach loopback, private
	// and metadata addresses: for local development and tests only.
	WebhookAllowPrivate bool `envconfig:"WEBHOOK_ALLOW_PRIVATE" default:"false"`
	// WebhookTimeout bounds one delivery attempt.
	WebhookTimeout time.Duration `envconfig:"WEBHOOK_TIMEOUT" default:"15s"`
	// ShutdownTimeout bounds graceful shutdown.
	ShutdownTimeout time.Duration `envconfig:"SHUTDOWN_TIMEOUT" default:"10s"`
}

// Load reads the environment.
func Load() (Config, error) {
	var c Config
	if err := envconfig.Process(Prefix, &c); err != nil {
		return Config{}, fmt.Errorf("configuration: %w", err)
	}
	for _, r := range c.Roles {
		switch strings.TrimSpace(r) {
		case "api", "worker", "dispatcher", "gateway":
		default:
			return Config{}, fmt.Errorf("configuration: unknown role %q in COMPUTE_ROLES", r)
		}
	}
	return c, nil
}

// Has reports whether this process plays role.
func (c Config) Has(role string) bool {
	for _, r := range c.Roles {
		if strings.TrimSpace(r) == role {
			return true
		}
	}
	return false
}
