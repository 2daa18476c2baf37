// Package config is the one place the service reads its environment: a
// single envconfig struct, parsed in main and passed down explicitly.
package config

import (
	"fmt"
	"os"
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
	DatabaseURL string `envconfig:"COMPUTE_DATABASE_URL"`
	// ReadDatabaseURL is a hot standby of DatabaseURL (a PostgreSQL
	// streaming replica) that serves the read-model queries while it is
	// within ReadMaxLag of the primary; empty: every read on the primary
	// (docs/operations/scale-out.md).
	ReadDatabaseURL string `envconfig:"COMPUTE_READ_DATABASE_URL"`
	// ReadMaxLag is how far behind the primary the read replica may fall
	// and still serve reads; beyond it the reads go to the primary until
	// it is back within half of it.
	ReadMaxLag time.Duration `envconfig:"COMPUTE_READ_MAX_LAG" default:"5s"`
	// PGDir is where the private cluster lives when no DatabaseURL is set.
	PGDir string `envconfig:"COMPUTE_PG_DIR" default:".compute/pg"`
	// Addr is the HTTP listen address.
	Addr string `envconfig:"COMPUTE_ADDR" default:":8080"`
	// Roles this process plays: api, worker, dispatcher, gateway.
	Roles []string `envconfig:"COMPUTE_ROLES" default:"api,worker,dispatcher,gateway"`
	// GatewayAddr is where the gateway role listens for node daemons.
	GatewayAddr string `envconfig:"COMPUTE_GATEWAY_ADDR" default:":8081"`
	// GatewayID names this gateway (its lease is gateway:<id>); empty means
	// the host name. Keep it stable across restarts of one gateway.
	GatewayID string `envconfig:"COMPUTE_GATEWAY_ID"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `envconfig:"COMPUTE_LOG_LEVEL" default:"info"`
	// BodyLimit caps request bodies (echo syntax: 1M, 512K).
	BodyLimit string `envconfig:"COMPUTE_BODY_LIMIT" default:"1M"`
	// MaxConns bounds the database pool (the API's, when the process
	// also runs background roles). It is also how many commands one
	// process runs at once at most (fewer while the sinks lag:
	// SinkLagTarget): beyond about three per core of the database,
	// more only queue inside PostgreSQL, where they take the CPU the
	// background roles need. On a 2-core server with the API saturated
	// (16 clients): 6 gave the same reservations/s as 8 (182–186) with
	// webhook delivery p50 65–73 ms instead of 125–151 ms; in process,
	// 6 matched 8 at 8 callers and beat it at 32 (430 vs 406/s) and on a
	// hot pool (339 vs 275/s). 20 had left delivery at 0.6 of the event
	// rate (docs/benchmarks/history.md). Raise it with the database.
	MaxConns int32 `envconfig:"COMPUTE_MAX_CONNS" default:"6"`
	// BackgroundMaxConns bounds the separate pool of the worker,
	// dispatcher and gateway roles in a process that also serves the API,
	// so that API load queues for its own connections instead of starving
	// webhook delivery, projections and node sessions. A process without
	// the api role has one pool of MaxConns.
	BackgroundMaxConns int32 `envconfig:"COMPUTE_BACKGROUND_MAX_CONNS" default:"10"`
	// ReadMaxConns bounds the api role's separate pool for queries (reads
	// of the read models and the write model's rows, minPosition waits
	// included), so that a read never queues for a connection behind the
	// commands: with one pool, a read-your-writes GET under a saturating
	// write load waited for a command's connection first (p50 56 ms on 2
	// cores; 29 ms with a read pool of 2, the commands' rate unchanged:
	// docs/benchmarks/history.md).
	ReadMaxConns int32 `envconfig:"COMPUTE_READ_MAX_CONNS" default:"2"`
	// IdleInTxTimeout ends sessions idle inside a transaction, which would
	// otherwise hold the outbox frontier back for every reader.
	IdleInTxTimeout time.Duration `envconfig:"COMPUTE_IDLE_IN_TX_TIMEOUT" default:"30s"`
	// PgBouncer avoids named prepared statements (pgx cache_describe mode)
	// and LISTEN, for PgBouncer in transaction pooling mode.
	PgBouncer bool `envconfig:"COMPUTE_PGBOUNCER" default:"false"`
	// TokenCacheTTL is how long an authenticated token is reused.
	TokenCacheTTL time.Duration `envconfig:"COMPUTE_TOKEN_CACHE_TTL" default:"30s"`
	// MaxTokenTTL, when positive, is the longest lifetime of an API token
	// issued through the API (POST /v1/tokens): one asked for without an
	// expiry, or expiring later than this from now, is 400
	// TOKEN_LIFETIME_EXCEEDED, never shortened. The bootstrap token of a
	// first start, `compute tokens create --database` and the demo's
	// tokens are outside it. The special value 0 (the default) sets no
	// maximum.
	MaxTokenTTL time.Duration `envconfig:"COMPUTE_MAX_TOKEN_TTL" default:"0"`
	// IdempotencyTTL is how long idempotency keys are kept.
	IdempotencyTTL time.Duration `envconfig:"COMPUTE_IDEMPOTENCY_TTL" default:"24h"`
	// EventRetention is how long events (outbox rows) are kept; 0 keeps
	// them forever. Pruning never passes the slowest sink's cursor.
	EventRetention time.Duration `envconfig:"COMPUTE_EVENT_RETENTION" default:"720h"`
	// WorkRetention is how long finished node jobs and finished webhook
	// deliveries are kept; 0 keeps them forever.
	WorkRetention time.Duration `envconfig:"COMPUTE_WORK_RETENTION" default:"168h"`
	// WebhookAttemptRetention is how long webhook attempts are kept; 0
	// keeps them forever.
	WebhookAttemptRetention time.Duration `envconfig:"COMPUTE_WEBHOOK_ATTEMPT_RETENTION" default:"168h"`
	// PruneEvery is how often the pruning reconciler runs.
	PruneEvery time.Duration `envconfig:"COMPUTE_PRUNE_EVERY" default:"10m"`
	// NodeCredentialGrace is how long a node's earlier credentials keep
	// authenticating after it re-joins; 0 revokes them at the re-join.
	NodeCredentialGrace time.Duration `envconfig:"COMPUTE_NODE_CREDENTIAL_GRACE" default:"10m"`
	// NodesWithoutDaemons keeps nodes that are registered but never join
	// schedulable, instead of unreachable 40 s after their registration:
	// for fleets without daemons (benchmarks, fault tests), never in
	// production.
	NodesWithoutDaemons bool `envconfig:"COMPUTE_NODES_WITHOUT_DAEMONS" default:"false"`
	// NodeResyncEvery is how often each node's assignments are compared
	// with the outcomes of its assign and unassign jobs (what is missing is
	// queued again), and how long a node's observed generation may lag its
	// generation before `compute check` reports drift.
	NodeResyncEvery time.Duration `envconfig:"COMPUTE_NODE_RESYNC_EVERY" default:"5m"`
	// MaxOpenNodeJobs is how many commands.run jobs (exec, wipe, deploy)
	// one tenant may have open — queued, sent or running — on one node; one
	// more is 409 CONFLICT. It bounds what a tenant can pile up in front of a node's
	// daemon. Defaults to 64; must be positive.
	MaxOpenNodeJobs int `envconfig:"COMPUTE_MAX_OPEN_NODE_JOBS" default:"64"`
	// MaxPendingReservations is how many pending reservations one tenant
	// may have; a create that would end pending past it is 409
	// QUOTA_EXCEEDED. It bounds what one tenant adds to every run of a
	// waiting line. Defaults to 1000; must be positive.
	MaxPendingReservations int `envconfig:"COMPUTE_MAX_PENDING_RESERVATIONS" default:"1000"`
	// FairShareHalfLife is the half-life of the decayed GPU usage that
	// orders each pool's and site's waiting line
	// (docs/concepts/fair-share.md): usage that old counts half. 168h (7
	// days) is Slurm's default; must be positive.
	FairShareHalfLife time.Duration `envconfig:"COMPUTE_FAIR_SHARE_HALF_LIFE" default:"168h"`
	// MinReservationLength is the shortest window a reservation may ask
	// for, from its start to its end as sent; a shorter create is 400
	// INVALID_ARGUMENT. 1m; must be positive and at most
	// MaxReservationLength. A window of a microsecond was booked, charged a
	// quota slot and queued node work, and ended before it could activate.
	MinReservationLength time.Duration `envconfig:"COMPUTE_MIN_RESERVATION_LENGTH" default:"1m"`
	// MaxReservationLength is the longest window a reservation may have,
	// from when it is booked; a longer create or extension is 400
	// INVALID_ARGUMENT. 2160h (90 days); at most 8784h (366 days), which
	// the database holds every reservation to.
	MaxReservationLength time.Duration `envconfig:"COMPUTE_MAX_RESERVATION_LENGTH" default:"2160h"`
	// MaxBookingHorizon is how far ahead of now a reservation may start; a
	// create that starts later is 400 INVALID_ARGUMENT. 8784h (366 days).
	MaxBookingHorizon time.Duration `envconfig:"COMPUTE_MAX_BOOKING_HORIZON" default:"8784h"`
	// PollInterval is how often loops poll when no poke arrives.
	PollInterval time.Duration `envconfig:"COMPUTE_POLL_INTERVAL" default:"1s"`
	// ListenURL is a direct (not pooled) connection for LISTEN/NOTIFY pokes.
	// Empty means DatabaseURL; "off" disables pokes (PgBouncer in transaction
	// mode cannot LISTEN), leaving polling alone.
	ListenURL string `envconfig:"COMPUTE_LISTEN_URL"`
	// WebhookAllowPrivate lets webhook deliveries reach loopback, private
	// and metadata addresses: for local development and tests only.
	WebhookAllowPrivate bool `envconfig:"COMPUTE_WEBHOOK_ALLOW_PRIVATE" default:"false"`
	// WebhookTimeout bounds one delivery attempt.
	WebhookTimeout time.Duration `envconfig:"COMPUTE_WEBHOOK_TIMEOUT" default:"15s"`
	// WorkerConcurrency is how many reconciler items (reservations, node
	// liveness, node commands) one worker process runs at once.
	WorkerConcurrency int `envconfig:"COMPUTE_WORKER_CONCURRENCY" default:"8"`
	// WebhookConcurrency is how many webhook deliveries one worker process
	// runs at once, in a pool of its own, apart from the reconcilers. Keep
	// it well above WebhookMaxInflightPerTenant, so that one tenant's slow
	// endpoints leave room for the others.
	WebhookConcurrency int `envconfig:"COMPUTE_WEBHOOK_CONCURRENCY" default:"32"`
	// WebhookMaxEndpoints caps the webhook endpoints of one tenant.
	WebhookMaxEndpoints int `envconfig:"COMPUTE_WEBHOOK_MAX_ENDPOINTS" default:"20"`
	// WebhookMaxInflightPerTenant caps one tenant's delivery attempts in
	// flight at once, across all processes.
	WebhookMaxInflightPerTenant int `envconfig:"COMPUTE_WEBHOOK_MAX_INFLIGHT_PER_TENANT" default:"8"`
	// WebhookMaxInflightPerEndpoint caps the attempts in flight to one
	// endpoint.
	WebhookMaxInflightPerEndpoint int `envconfig:"COMPUTE_WEBHOOK_MAX_INFLIGHT_PER_ENDPOINT" default:"2"`
	// WebhookBreakerThreshold is how many failed attempts in a row open an
	// endpoint's circuit breaker.
	WebhookBreakerThreshold int `envconfig:"COMPUTE_WEBHOOK_BREAKER_THRESHOLD" default:"5"`
	// WebhookBreakerCooldown is how long an opened breaker first defers the
	// endpoint's deliveries; it doubles with each re-opening.
	WebhookBreakerCooldown time.Duration `envconfig:"COMPUTE_WEBHOOK_BREAKER_COOLDOWN" default:"1m"`
	// WebhookBreakerMaxCooldown bounds the doubling.
	WebhookBreakerMaxCooldown time.Duration `envconfig:"COMPUTE_WEBHOOK_BREAKER_MAX_COOLDOWN" default:"30m"`
	// WebhookRecoverInterval is the least time between two recovers of
	// one endpoint.
	WebhookRecoverInterval time.Duration `envconfig:"COMPUTE_WEBHOOK_RECOVER_INTERVAL" default:"1m"`
	// BillingURL receives closed usage windows (the billing sink,
	// docs/concepts/billing.md); empty: no billing sink runs.
	BillingURL string `envconfig:"COMPUTE_BILLING_URL"`
	// BillingSecret signs the billing sink's requests like a webhook
	// endpoint's (whsec_<base64>, at least 24 bytes); required with
	// BillingURL.
	BillingSecret string `envconfig:"COMPUTE_BILLING_SECRET"`
	// BillingTimeout bounds one billing request.
	BillingTimeout time.Duration `envconfig:"COMPUTE_BILLING_TIMEOUT" default:"15s"`
	// NATSURL turns the JetStream sink on: the dispatcher role forwards
	// every event to NATS JetStream at this URL (nats://host:4222, several
	// comma separated; tls:// for TLS), on subjects compute.<tenant>.<type>
	// (docs/operations/scale-out.md). Empty: nothing connects to NATS.
	NATSURL string `envconfig:"COMPUTE_NATS_URL"`
	// NATSCreds is a NATS credentials file (JWT and nkey seed), for a
	// server with decentralised auth; user and password or a token can go
	// in NATSURL instead.
	NATSCreds string `envconfig:"COMPUTE_NATS_CREDS"`
	// NATSStream is the JetStream stream the sink creates or updates at
	// start, with the subjects compute.>.
	NATSStream string `envconfig:"COMPUTE_NATS_STREAM" default:"COMPUTE_EVENTS"`
	// NATSStorage is the stream's storage: file or memory.
	NATSStorage string `envconfig:"COMPUTE_NATS_STORAGE" default:"file"`
	// NATSReplicas is the stream's replica count (1 to 5; a clustered
	// JetStream is needed above 1).
	NATSReplicas int `envconfig:"COMPUTE_NATS_REPLICAS" default:"1"`
	// NATSMaxAge is how long the stream keeps a message; 0 keeps them
	// until removed by hand.
	NATSMaxAge time.Duration `envconfig:"COMPUTE_NATS_MAX_AGE" default:"720h"`
	// NATSDuplicateWindow is how long JetStream remembers a Nats-Msg-Id
	// (the event id) to drop a second copy: it must cover a redelivery
	// after a takeover or a lost acknowledgement.
	NATSDuplicateWindow time.Duration `envconfig:"COMPUTE_NATS_DUPLICATE_WINDOW" default:"2m"`
	// StreamSource is where an API process reads the event stream it
	// serves (GET /v1/events/stream, the console's live tail): postgres,
	// the outbox, or nats, the JetStream stream NATSStream that the
	// dispatcher's sink fills (needs NATSURL), so that API processes add
	// no load on the primary for streams. Ids and Last-Event-ID are the
	// same with either.
	StreamSource string `envconfig:"COMPUTE_STREAM_SOURCE" default:"postgres"`
	// ShutdownTimeout bounds graceful shutdown.
	ShutdownTimeout time.Duration `envconfig:"COMPUTE_SHUTDOWN_TIMEOUT" default:"10s"`

	// HTTP listener limits, of the API and the gateway listener alike
	// (each listener has its own connection cap). Event streams and
	// daemon WebSocket sessions are exempt from the read and write
	// timeouts.
	HTTPReadHeaderTimeout time.Duration `envconfig:"COMPUTE_HTTP_READ_HEADER_TIMEOUT" default:"10s"`
	HTTPReadTimeout       time.Duration `envconfig:"COMPUTE_HTTP_READ_TIMEOUT" default:"30s"`
	HTTPWriteTimeout      time.Duration `envconfig:"COMPUTE_HTTP_WRITE_TIMEOUT" default:"60s"`
	HTTPIdleTimeout       time.Duration `envconfig:"COMPUTE_HTTP_IDLE_TIMEOUT" default:"2m"`
	HTTPMaxHeaderBytes    int           `envconfig:"COMPUTE_HTTP_MAX_HEADER_BYTES" default:"65536"`
	HTTPMaxConns          int           `envconfig:"COMPUTE_HTTP_MAX_CONNS" default:"10000"`
	// Event streams (GET /v1/events/stream) open at once in one process,
	// per token and per tenant, and how long one stream may last.
	StreamsPerToken   int           `envconfig:"COMPUTE_STREAMS_PER_TOKEN" default:"8"`
	StreamsPerTenant  int           `envconfig:"COMPUTE_STREAMS_PER_TENANT" default:"64"`
	StreamMaxLifetime time.Duration `envconfig:"COMPUTE_STREAM_MAX_LIFETIME" default:"1h"`

	// CommandTimeout is the deadline of one state-changing API request
	// (POST, PUT, PATCH, DELETE under /v1) and so of its transaction;
	// past it the answer is 503 UNAVAILABLE with Retry-After.
	CommandTimeout time.Duration `envconfig:"COMPUTE_COMMAND_TIMEOUT" default:"10s"`
	// SinkLagTarget is the event sinks' backlog above which an API
	// process admits one command fewer at once, down to one, every 100
	// ms; under half of it, one more, up to MaxConns. The backlog: how
	// long visible events have waited for the slowest working projection
	// or the webhook scheduler (to the 100 ms), or the oldest webhook
	// delivery for a worker while no attempt is slow. Commands
	// over the bound wait within CommandTimeout. It keeps webhook delivery
	// timely while the API saturates the database, at some of the API's
	// rate then (docs/decisions/0017-command-admission.md). 0 turns it off.
	SinkLagTarget time.Duration `envconfig:"COMPUTE_SINK_LAG_TARGET" default:"70ms"`
	// MetricsAddr is an internal listener serving /metrics, /readyz (with
	// details) and /healthz without a token; bind it to a private address.
	// Empty: none.
	MetricsAddr string `envconfig:"COMPUTE_METRICS_ADDR"`
	// MetricsToken is a bearer token that may read /metrics on the API
	// listener, for scrapers that cannot reach MetricsAddr. Empty: only
	// operator tokens may.
	MetricsToken string `envconfig:"COMPUTE_METRICS_TOKEN"`
	// OTLPEndpoint turns tracing on: spans are exported over OTLP/HTTP to
	// this base URL (http://collector:4318; /v1/traces is appended). Read
	// from COMPUTE_OTEL_EXPORTER_OTLP_ENDPOINT or the standard
	// OTEL_EXPORTER_OTLP_ENDPOINT. Empty (with OTLPTracesEndpoint): no
	// tracing, at no cost. The exporter's other settings (headers, TLS,
	// timeout) and the sampler come from the standard OTEL_* variables.
	OTLPEndpoint string `envconfig:"COMPUTE_OTEL_EXPORTER_OTLP_ENDPOINT"`
	// OTLPTracesEndpoint is the full URL spans are sent to, as the
	// standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; it wins over
	// OTLPEndpoint.
	OTLPTracesEndpoint string `envconfig:"COMPUTE_OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"`

	// CORSOrigins are the exact origins (scheme://host[:port], comma
	// separated) whose pages may call the API from a browser. Empty: no
	// CORS headers at all.
	CORSOrigins []string `envconfig:"COMPUTE_CORS_ORIGINS"`
	// TrustedProxies are the load balancers and reverse proxies (addresses
	// or CIDR prefixes, comma separated) in front of the API and the
	// gateway whose X-Forwarded-For is believed when failed
	// authentications are counted per client address. Empty: every
	// failure counts against the connection's peer, and behind a proxy all
	// clients share the proxy's allowance.
	TrustedProxies []string `envconfig:"COMPUTE_TRUSTED_PROXIES"`
	// RateLimit is each API token's sustained request rate per second in
	// one API process (the limit is per process, not fleet-wide), with
	// bursts of RateBurst; past it, 429 RATE_LIMITED with Retry-After. 0
	// disables it: the load harnesses (chaos/, cmd/compute-bench), which
	// measure throughput on one token, set 0.
	RateLimit float64 `envconfig:"COMPUTE_RATE_LIMIT" default:"100"`
	RateBurst int     `envconfig:"COMPUTE_RATE_BURST" default:"200"`
}

// Load reads the environment. Every tag spells its COMPUTE_ name in full
// and envconfig gets no prefix: given one, envconfig would also read each
// tag's bare name (ADDR, ROLES, LOG_LEVEL, …) whenever the prefixed name is
// unset. Only DATABASE_URL and the two OpenTelemetry endpoints are read
// under their standard names too, and only when the COMPUTE_ name is unset.
func Load() (Config, error) {
	var c Config
	err := envconfig.Process("", &c)
	if err != nil {
		return Config{}, fmt.Errorf("configuration: %w", err)
	}
	for name, into := range map[string]*string{"DATABASE_URL": &c.DatabaseURL,
		"OTEL_EXPORTER_OTLP_ENDPOINT": &c.OTLPEndpoint, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": &c.OTLPTracesEndpoint} {
		if _, set := os.LookupEnv(Prefix + "_" + name); !set {
			*into = os.Getenv(name)
		}
	}
	if err := c.check(); err != nil {
		return Config{}, err
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
