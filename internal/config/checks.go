package config

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/bettercompute/compute/internal/authn"
)

// The checks of settings that a type alone cannot make: ranges, a secret's
// shape, an origin's, and settings that need each other (billing's URL and
// secret, the stream source and NATS). Load runs them; each error names the
// variable to fix.

// check refuses a configuration that could not run as asked, and
// normalizes COMPUTE_CORS_ORIGINS (blank entries dropped).
func (c *Config) check() error {
	if err := CheckLogLevel(c.LogLevel); err != nil {
		return err
	}
	if c.SinkLagTarget < 0 {
		return fmt.Errorf("configuration: COMPUTE_SINK_LAG_TARGET cannot be negative (0 turns command admission off)")
	}
	if c.MaxTokenTTL < 0 {
		return fmt.Errorf("configuration: COMPUTE_MAX_TOKEN_TTL cannot be negative (0 sets no maximum)")
	}
	if c.NodeCredentialGrace < 0 {
		return fmt.Errorf("configuration: COMPUTE_NODE_CREDENTIAL_GRACE cannot be negative")
	}
	for name, v := range map[string]time.Duration{"EVENT_RETENTION": c.EventRetention, "WORK_RETENTION": c.WorkRetention,
		"WEBHOOK_ATTEMPT_RETENTION": c.WebhookAttemptRetention} {
		if v < 0 {
			return fmt.Errorf("configuration: COMPUTE_%s cannot be negative (0 keeps forever)", name)
		}
	}
	for name, v := range map[string]int{
		"WORKER_CONCURRENCY": c.WorkerConcurrency, "WEBHOOK_CONCURRENCY": c.WebhookConcurrency,
		"WEBHOOK_MAX_ENDPOINTS": c.WebhookMaxEndpoints, "WEBHOOK_MAX_INFLIGHT_PER_TENANT": c.WebhookMaxInflightPerTenant,
		"WEBHOOK_MAX_INFLIGHT_PER_ENDPOINT": c.WebhookMaxInflightPerEndpoint, "WEBHOOK_BREAKER_THRESHOLD": c.WebhookBreakerThreshold,
	} {
		if v < 1 {
			return fmt.Errorf("configuration: COMPUTE_%s must be at least 1, not %d", name, v)
		}
	}
	for name, v := range map[string]int64{
		"HTTP_READ_HEADER_TIMEOUT": int64(c.HTTPReadHeaderTimeout), "HTTP_READ_TIMEOUT": int64(c.HTTPReadTimeout),
		"HTTP_WRITE_TIMEOUT": int64(c.HTTPWriteTimeout), "HTTP_IDLE_TIMEOUT": int64(c.HTTPIdleTimeout),
		"HTTP_MAX_HEADER_BYTES": int64(c.HTTPMaxHeaderBytes), "HTTP_MAX_CONNS": int64(c.HTTPMaxConns),
		"STREAMS_PER_TOKEN": int64(c.StreamsPerToken), "STREAMS_PER_TENANT": int64(c.StreamsPerTenant),
		"STREAM_MAX_LIFETIME": int64(c.StreamMaxLifetime), "NODE_RESYNC_EVERY": int64(c.NodeResyncEvery),
		"COMMAND_TIMEOUT": int64(c.CommandTimeout), "PRUNE_EVERY": int64(c.PruneEvery), "READ_MAX_LAG": int64(c.ReadMaxLag),
		"MAX_OPEN_NODE_JOBS": int64(c.MaxOpenNodeJobs), "MAX_PENDING_RESERVATIONS": int64(c.MaxPendingReservations),
		"FAIR_SHARE_HALF_LIFE": int64(c.FairShareHalfLife), "POLL_INTERVAL": int64(c.PollInterval),
		"MIN_RESERVATION_LENGTH": int64(c.MinReservationLength), "MAX_RESERVATION_LENGTH": int64(c.MaxReservationLength), "MAX_BOOKING_HORIZON": int64(c.MaxBookingHorizon),
	} {
		if v <= 0 {
			return fmt.Errorf("configuration: %s_%s must be positive", Prefix, name)
		}
	}
	if c.MaxReservationLength > 366*24*time.Hour {
		return fmt.Errorf("configuration: COMPUTE_MAX_RESERVATION_LENGTH is at most 8784h (366 days), not %s", c.MaxReservationLength)
	}
	if c.MinReservationLength > c.MaxReservationLength {
		// Nothing could be booked at all.
		return fmt.Errorf("configuration: COMPUTE_MIN_RESERVATION_LENGTH (%s) is longer than COMPUTE_MAX_RESERVATION_LENGTH (%s)",
			c.MinReservationLength, c.MaxReservationLength)
	}
	if (c.BillingURL == "") != (c.BillingSecret == "") {
		return fmt.Errorf("configuration: set both COMPUTE_BILLING_URL and COMPUTE_BILLING_SECRET, or neither")
	}
	if key, ok := strings.CutPrefix(c.BillingSecret, "whsec_"); c.BillingSecret != "" && !validSecret(key, ok) {
		return fmt.Errorf("configuration: COMPUTE_BILLING_SECRET must be whsec_<base64 of at least 24 bytes>")
	}
	if u, err := url.Parse(c.BillingURL); c.BillingURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		// The billing sink refuses it too, but only once running, and the
		// server then ran with no billing at all.
		// Not echoed: a billing URL often carries the receiver's credential.
		return fmt.Errorf("configuration: COMPUTE_BILLING_URL must be an http(s) URL with a host (https://billing.example.com/usage)")
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < MinMetricsTokenLen {
		// It is a password anyone who can reach the API listener may try.
		return fmt.Errorf("configuration: COMPUTE_METRICS_TOKEN must be at least %d characters (a random one: openssl rand -hex 16)", MinMetricsTokenLen)
	}
	if c.BillingURL != "" && c.BillingTimeout <= 0 {
		return fmt.Errorf("configuration: COMPUTE_BILLING_TIMEOUT must be positive")
	}
	if err := c.checkNATS(); err != nil {
		return err
	}
	if err := c.checkStreamSource(); err != nil {
		return err
	}
	for name, v := range map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.OTLPEndpoint,
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": c.OTLPTracesEndpoint} {
		if u, err := url.Parse(v); v != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			return fmt.Errorf("configuration: %s must be an http(s) URL such as http://otel-collector:4318, not %q", name, v)
		}
	}
	origins, err := corsOrigins(c.CORSOrigins)
	if err != nil {
		return err
	}
	c.CORSOrigins = origins
	if _, err := authn.NewClientAddresses(c.TrustedProxies); err != nil {
		return fmt.Errorf("configuration: COMPUTE_TRUSTED_PROXIES: %w (use addresses or CIDR prefixes, comma separated, such as 10.0.0.0/8)", err)
	}
	if c.RateLimit < 0 || math.IsNaN(c.RateLimit) || math.IsInf(c.RateLimit, 0) {
		return fmt.Errorf("configuration: COMPUTE_RATE_LIMIT must be a number of requests per second, 0 or more (0: no limit)")
	}
	if c.RateLimit > 0 && c.RateBurst < 1 {
		return fmt.Errorf("configuration: COMPUTE_RATE_BURST must be at least 1 while COMPUTE_RATE_LIMIT is on")
	}
	for _, r := range c.Roles {
		switch strings.TrimSpace(r) {
		case "api", "worker", "dispatcher", "gateway":
		default:
			return fmt.Errorf("configuration: unknown role %q in COMPUTE_ROLES", r)
		}
	}
	return nil
}

// MinMetricsTokenLen is the shortest COMPUTE_METRICS_TOKEN accepted.
const MinMetricsTokenLen = 16

// validSecret reports whether key, the part of a signing secret after
// whsec_ (ok: the prefix was there), is base64 of at least 24 bytes, as
// Standard Webhooks asks.
func validSecret(key string, ok bool) bool {
	b, err := base64.StdEncoding.DecodeString(key)
	return ok && err == nil && len(b) >= 24
}

// corsOrigins checks COMPUTE_CORS_ORIGINS: each entry an exact origin,
// scheme://host[:port] as a browser sends it in Origin (lower case, no
// path, no trailing slash, no wildcard). Blank entries are dropped.
func corsOrigins(in []string) ([]string, error) {
	var out []string
	for _, o := range in {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.Scheme+"://"+u.Host != o || strings.ToLower(o) != o || strings.Contains(o, "*") {
			return nil, fmt.Errorf("configuration: COMPUTE_CORS_ORIGINS: %q is not an exact origin: use scheme://host[:port] in lower case, such as https://console.example.com", o)
		}
		out = append(out, o)
	}
	return out, nil
}

// Values of COMPUTE_STREAM_SOURCE.
const (
	StreamSourcePostgres = "postgres"
	StreamSourceNATS     = "nats"
)

// checkStreamSource checks COMPUTE_STREAM_SOURCE: nats reads the
// JetStream stream, so it needs the NATS server.
func (c Config) checkStreamSource() error {
	switch c.StreamSource {
	case StreamSourcePostgres:
	case StreamSourceNATS:
		if c.NATSURL == "" {
			return fmt.Errorf("configuration: COMPUTE_STREAM_SOURCE=nats serves event streams from NATS JetStream: set COMPUTE_NATS_URL too")
		}
	default:
		return fmt.Errorf("configuration: COMPUTE_STREAM_SOURCE must be postgres or nats, not %q", c.StreamSource)
	}
	return nil
}

// checkNATS checks the JetStream sink's settings when it is on
// (COMPUTE_NATS_URL set): a stream JetStream would refuse is refused here,
// at start, rather than retried for ever by the sink.
func (c Config) checkNATS() error {
	if c.NATSURL == "" {
		if c.NATSCreds != "" {
			return fmt.Errorf("configuration: COMPUTE_NATS_CREDS is set without COMPUTE_NATS_URL")
		}
		return nil
	}
	switch {
	case c.NATSStream == "" || strings.ContainsAny(c.NATSStream, " \t.*>/\\"):
		return fmt.Errorf("configuration: COMPUTE_NATS_STREAM %q is not a stream name (no spaces, '.', '*', '>', '/' or '\\')", c.NATSStream)
	case c.NATSStorage != "file" && c.NATSStorage != "memory":
		return fmt.Errorf("configuration: COMPUTE_NATS_STORAGE must be file or memory, not %q", c.NATSStorage)
	case c.NATSReplicas < 1 || c.NATSReplicas > 5:
		return fmt.Errorf("configuration: COMPUTE_NATS_REPLICAS must be 1 to 5, not %d", c.NATSReplicas)
	case c.NATSDuplicateWindow <= 0:
		return fmt.Errorf("configuration: COMPUTE_NATS_DUPLICATE_WINDOW must be positive")
	case c.NATSMaxAge < 0 || (c.NATSMaxAge > 0 && c.NATSMaxAge < c.NATSDuplicateWindow):
		return fmt.Errorf("configuration: COMPUTE_NATS_MAX_AGE must be 0 (keep) or at least COMPUTE_NATS_DUPLICATE_WINDOW")
	}
	return nil
}

// CheckLogLevel refuses a COMPUTE_LOG_LEVEL that is none of debug, info,
// warn and error (in any case): read as info, a typo would hide the very
// lines it asked for. The node agent, which reads no other setting of
// this package, checks its level with it too.
func CheckLogLevel(level string) error {
	switch strings.ToLower(level) {
	case "debug", "info", "warn", "error":
		return nil
	}
	return fmt.Errorf("configuration: %s_LOG_LEVEL must be debug, info, warn or error, not %q", Prefix, level)
}
