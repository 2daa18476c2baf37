package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDefaultsAndOverrides(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://x/y")
	t.Setenv("COMPUTE_ADDR", "127.0.0.1:9999")
	t.Setenv("COMPUTE_ROLES", "api,worker")
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, "postgres://x/y", c.DatabaseURL, "the unprefixed DATABASE_URL is honoured")
	require.Equal(t, "127.0.0.1:9999", c.Addr)
	require.Equal(t, 24*time.Hour, c.IdempotencyTTL)
	require.Equal(t, 10*time.Minute, c.NodeCredentialGrace)
	require.Equal(t, 5*time.Minute, c.NodeResyncEvery)
	require.Equal(t, 64, c.MaxOpenNodeJobs)
	require.True(t, c.Has("worker"))
	require.False(t, c.Has("gateway"))

	t.Setenv("COMPUTE_DATABASE_URL", "postgres://prefixed/z")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, "postgres://prefixed/z", c.DatabaseURL, "the prefixed name wins")
}

// A log level Load does not know is refused, not read as info: a typo
// would otherwise hide the lines asked for. Case does not matter.
func TestUnknownLogLevelIsRejected(t *testing.T) {
	t.Setenv("COMPUTE_LOG_LEVEL", "verbose")
	_, err := Load()
	require.ErrorContains(t, err, `COMPUTE_LOG_LEVEL must be debug, info, warn or error, not "verbose"`)
	for _, level := range []string{"debug", "INFO", "Warn", "error"} {
		t.Setenv("COMPUTE_LOG_LEVEL", level)
		_, err := Load()
		require.NoError(t, err, level)
	}
}

func TestUnknownRoleIsRejected(t *testing.T) {
	t.Setenv("COMPUTE_ROLES", "api,scheduler")
	_, err := Load()
	require.ErrorContains(t, err, "scheduler")
}

func TestNodeCredentialGrace(t *testing.T) {
	t.Setenv("COMPUTE_NODE_CREDENTIAL_GRACE", "90s")
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, 90*time.Second, c.NodeCredentialGrace)

	t.Setenv("COMPUTE_NODE_CREDENTIAL_GRACE", "-1s")
	_, err = Load()
	require.ErrorContains(t, err, "COMPUTE_NODE_CREDENTIAL_GRACE")
}

// COMPUTE_MAX_TOKEN_TTL sets no maximum unless given, and is never
// negative.
func TestMaxTokenTTL(t *testing.T) {
	c, err := Load()
	require.NoError(t, err)
	require.Zero(t, c.MaxTokenTTL, "no maximum by default")

	t.Setenv("COMPUTE_MAX_TOKEN_TTL", "720h")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, 720*time.Hour, c.MaxTokenTTL)

	t.Setenv("COMPUTE_MAX_TOKEN_TTL", "-1h")
	_, err = Load()
	require.ErrorContains(t, err, "COMPUTE_MAX_TOKEN_TTL")
}

func TestHTTPLimitsAndStreams(t *testing.T) {
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, c.HTTPReadTimeout)
	require.Equal(t, 60*time.Second, c.HTTPWriteTimeout)
	require.Equal(t, 2*time.Minute, c.HTTPIdleTimeout)
	require.Equal(t, 64<<10, c.HTTPMaxHeaderBytes)
	require.Equal(t, 8, c.StreamsPerToken)
	require.Equal(t, 64, c.StreamsPerTenant)
	require.Equal(t, time.Hour, c.StreamMaxLifetime)
	require.Empty(t, c.MetricsAddr)
	require.Empty(t, c.MetricsToken)

	t.Setenv("COMPUTE_METRICS_TOKEN", "short")
	_, err = Load()
	require.ErrorContains(t, err, "COMPUTE_METRICS_TOKEN must be at least 16 characters")
	t.Setenv("COMPUTE_METRICS_TOKEN", "0123456789abcdef")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, "0123456789abcdef", c.MetricsToken)

	t.Setenv("COMPUTE_STREAMS_PER_TOKEN", "2")
	t.Setenv("COMPUTE_METRICS_ADDR", "127.0.0.1:9090")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, 2, c.StreamsPerToken)
	require.Equal(t, "127.0.0.1:9090", c.MetricsAddr)

	t.Setenv("COMPUTE_HTTP_READ_TIMEOUT", "0s")
	_, err = Load()
	require.ErrorContains(t, err, "COMPUTE_HTTP_READ_TIMEOUT")
}

func TestWorkerPoolsAndWebhookLimits(t *testing.T) {
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, 8, c.WorkerConcurrency)
	require.Equal(t, 32, c.WebhookConcurrency)
	require.Equal(t, 20, c.WebhookMaxEndpoints)
	require.Equal(t, 8, c.WebhookMaxInflightPerTenant)
	require.Equal(t, 2, c.WebhookMaxInflightPerEndpoint)
	require.Equal(t, 5, c.WebhookBreakerThreshold)
	require.Equal(t, time.Minute, c.WebhookBreakerCooldown)
	require.Equal(t, 30*time.Minute, c.WebhookBreakerMaxCooldown)
	require.Equal(t, time.Minute, c.WebhookRecoverInterval)

	t.Setenv("COMPUTE_WEBHOOK_MAX_INFLIGHT_PER_TENANT", "0")
	_, err = Load()
	require.ErrorContains(t, err, "COMPUTE_WEBHOOK_MAX_INFLIGHT_PER_TENANT")
}

func TestNodeResyncEvery(t *testing.T) {
	t.Setenv("COMPUTE_NODE_RESYNC_EVERY", "30s")
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, c.NodeResyncEvery)

	t.Setenv("COMPUTE_NODE_RESYNC_EVERY", "0s")
	_, err = Load()
	require.ErrorContains(t, err, "COMPUTE_NODE_RESYNC_EVERY")
}

func TestFairShareHalfLife(t *testing.T) {
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, 168*time.Hour, c.FairShareHalfLife, "Slurm's default: 7 days")

	t.Setenv("COMPUTE_FAIR_SHARE_HALF_LIFE", "24h")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, 24*time.Hour, c.FairShareHalfLife)

	for _, v := range []string{"0s", "-1h"} {
		t.Setenv("COMPUTE_FAIR_SHARE_HALF_LIFE", v)
		_, err = Load()
		require.ErrorContains(t, err, "COMPUTE_FAIR_SHARE_HALF_LIFE", v)
	}
}

// COMPUTE_POLL_INTERVAL is every background loop's ticker: 0 or a negative
// value made `compute serve` panic at start ("non-positive interval for
// NewTicker", a goroutine dump), not refuse the setting by name.
func TestPollIntervalMustBePositive(t *testing.T) {
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, time.Second, c.PollInterval)

	for _, v := range []string{"0s", "-1s"} {
		t.Setenv("COMPUTE_POLL_INTERVAL", v)
		_, err = Load()
		require.ErrorContains(t, err, "COMPUTE_POLL_INTERVAL must be positive", v)
	}
}

// COMPUTE_MIN_RESERVATION_LENGTH is positive and no longer than the
// maximum, under which nothing could be booked at all.
func TestMinReservationLength(t *testing.T) {
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, time.Minute, c.MinReservationLength)

	for v, want := range map[string]string{"0s": "COMPUTE_MIN_RESERVATION_LENGTH must be positive",
		"-1m": "COMPUTE_MIN_RESERVATION_LENGTH must be positive", "2161h": "is longer than COMPUTE_MAX_RESERVATION_LENGTH (2160h0m0s)"} {
		t.Setenv("COMPUTE_MIN_RESERVATION_LENGTH", v)
		_, err = Load()
		require.ErrorContains(t, err, want, v)
	}
	t.Setenv("COMPUTE_MIN_RESERVATION_LENGTH", "10s")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, 10*time.Second, c.MinReservationLength)
}
