package webhook

import (
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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

// Config tunes delivery. The zero value of each field means its default.
type Config struct {
	// Timeout bounds one HTTP attempt, connect to last byte (default 15 s).
	Timeout time.Duration
	// Schedule is the delay before each attempt; its length is the number
	// of attempts (default DefaultSchedule).
	Schedule []time.Duration
	// Jitter spreads each retry by up to ±Jitter of its delay, so endpoints
	// that failed together do not retry in lockstep (default 0.1; negative
	// means none).
	Jitter float64
	// Rand returns a number in [0, 1) for the jitter; tests inject a fixed
	// one (default math/rand/v2).
	Rand func() float64
	// DisableAfter disables an endpoint that has failed continuously this
	// long (default 5 days).
	DisableAfter time.Duration
	// SecretOverlap is how long a rotated-out secret keeps signing beside
	// the new one (default 24 h).
	SecretOverlap time.Duration
	// AllowPrivate lifts the SSRF guard, for local development and tests
	// whose receivers listen on loopback (COMPUTE_WEBHOOK_ALLOW_PRIVATE).
	AllowPrivate bool
	// Client overrides the HTTP client (default NewHTTPClient(Timeout,
	// AllowPrivate)). It must not follow redirects.
	Client *http.Client
	// RecoverLimit bounds how many events one recover re-schedules
	// (default 10,000).
	RecoverLimit int
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = 15 * time.Second
	}
	if len(c.Schedule) == 0 {
		c.Schedule = DefaultSchedule
	}
	if c.Jitter == 0 {
		c.Jitter = 0.1
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	if c.DisableAfter <= 0 {
		c.DisableAfter = 5 * 24 * time.Hour
	}
	if c.SecretOverlap <= 0 {
		c.SecretOverlap = 24 * time.Hour
	}
	if c.Client == nil {
		c.Client = NewHTTPClient(c.Timeout, c.AllowPrivate)
	}
	if c.RecoverLimit <= 0 {
		c.RecoverLimit = 10_000
	}
	return c
}

// Service is the webhook feature: endpoint commands for the API, the
// scheduler sink for the outbox dispatcher and the delivery handler for the
// work queue. main builds one and wires its three faces.
type Service struct {
	pool   *pgxpool.Pool
	cfg    Config
	logger *slog.Logger
}

// New returns the service. It logs a warning when the SSRF guard is off, so
// a production process started with it off says so.
func New(pool *pgxpool.Pool, cfg Config, logger *slog.Logger) *Service {
	if logger == nil {
		logger = slog.Default()
	}
	s := &Service{pool: pool, cfg: cfg.withDefaults(), logger: logger.With("component", "webhook")}
	if s.cfg.AllowPrivate {
		s.logger.Warn("webhook SSRF guard is off: deliveries may reach loopback, private and metadata addresses (COMPUTE_WEBHOOK_ALLOW_PRIVATE=true)")
	}
	return s
}

// Config returns the effective configuration, defaults filled in.
func (s *Service) Config() Config { return s.cfg }
