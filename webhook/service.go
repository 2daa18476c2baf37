package webhook

import (
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/commands"
)

// KindDeliver is the work-queue kind of one delivery; its key is the
// delivery id.
const KindDeliver = "webhook.deliver"

// SinkID names the scheduler's outbox sink: its cursor row and its lease.
const SinkID = "webhooks"

// DefaultSchedule is Svix's schedule, as Standard Webhooks recommends:
// entry n is the delay before attempt n+1, so the first attempt is
// immediate and the eighth comes about 27.6 hours after the event.
var DefaultSchedule = []time.Duration{
	0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// The defaults of Config, each named on its field: a zero field falls back
// to it.
const (
	DefaultTimeout                = 15 * time.Second
	DefaultJitter                 = 0.1
	DefaultDisableAfter           = 5 * 24 * time.Hour
	DefaultSecretOverlap          = 24 * time.Hour
	DefaultRecoverLimit           = 10_000
	DefaultRecoverInterval        = time.Minute
	DefaultMaxEndpoints           = 20
	DefaultMaxInflightPerTenant   = 8
	DefaultMaxInflightPerEndpoint = 2
	DefaultConcurrency            = 32
	DefaultSlotRetry              = 100 * time.Millisecond
	DefaultSlotWait               = 2 * time.Second
	DefaultBreakerThreshold       = 5
	DefaultBreakerCooldown        = time.Minute
	DefaultBreakerMaxCooldown     = 30 * time.Minute
)

// Config tunes delivery. The zero value of each field means its default.
type Config struct {
	// Timeout bounds one HTTP attempt, connect to last byte (DefaultTimeout, 15 s).
	Timeout time.Duration
	// Schedule is the delay before each attempt; its length is the number
	// of attempts (default DefaultSchedule).
	Schedule []time.Duration
	// Jitter spreads each retry by up to ±Jitter of its delay, so endpoints
	// that failed together do not retry in lockstep (DefaultJitter, 0.1; negative
	// means none).
	Jitter float64
	// Rand returns a number in [0, 1) for the jitter; tests inject a fixed
	// one (default math/rand/v2).
	Rand func() float64
	// DisableAfter disables an endpoint that has failed continuously this
	// long (DefaultDisableAfter, 5 days).
	DisableAfter time.Duration
	// SecretOverlap is how long a rotated-out secret keeps signing beside
	// the new one (DefaultSecretOverlap, 24 h).
	SecretOverlap time.Duration
	// AllowPrivate lifts the SSRF guard, for local development and tests
	// whose receivers listen on loopback (COMPUTE_WEBHOOK_ALLOW_PRIVATE).
	AllowPrivate bool
	// Client overrides the HTTP client (default NewHTTPClient(Timeout,
	// AllowPrivate)). It must not follow redirects.
	Client *http.Client
	// RecoverLimit bounds how many events one recover re-schedules
	// (DefaultRecoverLimit, 10,000).
	RecoverLimit int
	// RecoverInterval is the least time between two recovers of one
	// endpoint; a recover sooner, or while another one of the endpoint
	// runs, is RATE_LIMITED (DefaultRecoverInterval, 1 min).
	RecoverInterval time.Duration

	// MaxEndpoints caps the endpoints of one tenant, enabled or not
	// (DefaultMaxEndpoints, 20).
	MaxEndpoints int
	// MaxInflightPerTenant caps the attempts of one tenant in flight at
	// once, across every process (DefaultMaxInflightPerTenant, 8).
	MaxInflightPerTenant int
	// MaxInflightPerEndpoint caps the attempts to one endpoint in flight at
	// once (DefaultMaxInflightPerEndpoint, 2).
	MaxInflightPerEndpoint int
	// Concurrency is the size of the work-queue pool that runs Deliver in
	// this process (COMPUTE_WEBHOOK_CONCURRENCY; DefaultConcurrency, 32).
	// Suspect deliveries, those of an endpoint that is failing or has never
	// answered, hold at most half of it at once (suspectCap), so that no
	// number of tenants whose endpoints hang can fill it.
	Concurrency int
	// SlotRetry is how long a slot is assumed to be held before this
	// process has seen one freed: it paces the retries of deliveries that
	// found their tenant's or endpoint's cap full (DefaultSlotRetry, 100 ms).
	SlotRetry time.Duration
	// SlotWait is how long a delivery that found a cap full may wait in
	// this process for a slot before it is put back: a few per tenant wait
	// (half MaxInflightPerTenant, at least 2), so that a slot freed by a
	// fast endpoint is taken again at once instead of at the next retry;
	// the others, and every delivery of a failing endpoint, are put back
	// at once (DefaultSlotWait, 2 s; negative: nobody waits).
	SlotWait time.Duration
	// BreakerThreshold is how many failed attempts in a row open an
	// endpoint's circuit breaker (DefaultBreakerThreshold, 5).
	BreakerThreshold int
	// BreakerCooldown is how long the breaker first stays open; each
	// opening after it without a success in between doubles it (DefaultBreakerCooldown,
	// 1 min).
	BreakerCooldown time.Duration
	// BreakerMaxCooldown bounds the doubled cool-down (DefaultBreakerMaxCooldown, 30 min).
	BreakerMaxCooldown time.Duration
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if len(c.Schedule) == 0 {
		c.Schedule = DefaultSchedule
	}
	if c.Jitter == 0 {
		c.Jitter = DefaultJitter
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	if c.DisableAfter <= 0 {
		c.DisableAfter = DefaultDisableAfter
	}
	if c.SecretOverlap <= 0 {
		c.SecretOverlap = DefaultSecretOverlap
	}
	if c.Client == nil {
		c.Client = NewHTTPClient(c.Timeout, c.AllowPrivate)
	}
	if c.RecoverLimit <= 0 {
		c.RecoverLimit = DefaultRecoverLimit
	}
	if c.RecoverInterval <= 0 {
		c.RecoverInterval = DefaultRecoverInterval
	}
	if c.MaxEndpoints <= 0 {
		c.MaxEndpoints = DefaultMaxEndpoints
	}
	if c.MaxInflightPerTenant <= 0 {
		c.MaxInflightPerTenant = DefaultMaxInflightPerTenant
	}
	if c.MaxInflightPerEndpoint <= 0 {
		c.MaxInflightPerEndpoint = DefaultMaxInflightPerEndpoint
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.SlotRetry <= 0 {
		c.SlotRetry = DefaultSlotRetry
	}
	if c.SlotWait == 0 {
		c.SlotWait = DefaultSlotWait
	}
	if c.BreakerThreshold <= 0 {
		c.BreakerThreshold = DefaultBreakerThreshold
	}
	if c.BreakerCooldown <= 0 {
		c.BreakerCooldown = DefaultBreakerCooldown
	}
	if c.BreakerMaxCooldown <= 0 {
		c.BreakerMaxCooldown = DefaultBreakerMaxCooldown
	}
	c.BreakerMaxCooldown = max(c.BreakerMaxCooldown, c.BreakerCooldown)
	return c
}

// Service is the webhook feature: endpoint commands for the API, the
// scheduler sink for the outbox dispatcher and the delivery handler for the
// work queue. main builds one and wires its three faces.
type Service struct {
	pool   *pgxpool.Pool
	cmds   *commands.Handlers // writes endpoint state and events
	cfg    Config
	logger *slog.Logger
	slots  *slotState // this process's view of its in-flight slots (limits.go)
	// opened is, by endpoint id, the end of the last breaker opening this
	// process logged (a time.Time): the failures of the attempts that were
	// in flight when it opened report the same opening, once.
	opened sync.Map
}

// New returns the service, whose endpoint changes go through cmds (main's
// write side, with its settings). A process started with the SSRF guard off
// (Config.AllowPrivate) says so once at start (compute serve), not here: a
// process may build one service per pool.
func New(pool *pgxpool.Pool, cmds *commands.Handlers, cfg Config, logger *slog.Logger) *Service {
	if cmds == nil {
		panic("webhook.New: nil *commands.Handlers")
	}
	if logger == nil {
		logger = slog.Default()
	}
	s := &Service{pool: pool, cmds: cmds, cfg: cfg.withDefaults(), logger: logger.With("component", "webhook"), slots: newSlotState()}
	return s
}

// Config returns the effective configuration, defaults filled in.
func (s *Service) Config() Config { return s.cfg }
