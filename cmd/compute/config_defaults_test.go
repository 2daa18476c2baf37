package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/bettercompute/compute/billing"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/natsink"
	"github.com/bettercompute/compute/queries"
	"github.com/bettercompute/compute/webhook"
)

// A setting's default is written in its package (the constant a zero
// field falls back to) and in the envconfig tag main reads. This test
// ties the two, so that neither can change alone: `compute serve` with
// nothing set runs exactly the packages' defaults.
func TestConfigDefaultsAreThePackagesDefaults(t *testing.T) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, config.Prefix+"_") {
			t.Setenv(name, "") // restored after the test
			os.Unsetenv(name)
		}
	}
	cfg, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	for name, pair := range map[string][2]any{
		"IDEMPOTENCY_TTL":                   {cfg.IdempotencyTTL, commands.DefaultIdempotencyTTL},
		"EVENT_RETENTION":                   {cfg.EventRetention, commands.DefaultEventRetention},
		"WORK_RETENTION":                    {cfg.WorkRetention, commands.DefaultWorkRetention},
		"WEBHOOK_ATTEMPT_RETENTION":         {cfg.WebhookAttemptRetention, commands.DefaultWebhookAttemptRetention},
		"PRUNE_EVERY":                       {cfg.PruneEvery, commands.DefaultPruneEvery},
		"NODE_CREDENTIAL_GRACE":             {cfg.NodeCredentialGrace, commands.DefaultNodeCredentialGrace},
		"NODE_RESYNC_EVERY":                 {cfg.NodeResyncEvery, commands.DefaultNodeResyncEvery},
		"MAX_OPEN_NODE_JOBS":                {cfg.MaxOpenNodeJobs, commands.DefaultMaxOpenNodeJobs},
		"MAX_PENDING_RESERVATIONS":          {cfg.MaxPendingReservations, commands.DefaultMaxPendingReservations},
		"MIN_RESERVATION_LENGTH":            {cfg.MinReservationLength, commands.DefaultMinReservationLength},
		"MAX_RESERVATION_LENGTH":            {cfg.MaxReservationLength, commands.DefaultMaxReservationLength},
		"MAX_BOOKING_HORIZON":               {cfg.MaxBookingHorizon, commands.DefaultMaxBookingHorizon},
		"BODY_LIMIT":                        {cfg.BodyLimit, httpapi.DefaultBodyLimit},
		"COMMAND_TIMEOUT":                   {cfg.CommandTimeout, httpapi.DefaultCommandTimeout},
		"SINK_LAG_TARGET":                   {cfg.SinkLagTarget, httpapi.DefaultSinkLagTarget},
		"HTTP_READ_HEADER_TIMEOUT":          {cfg.HTTPReadHeaderTimeout, httpapi.DefaultReadHeaderTimeout},
		"HTTP_READ_TIMEOUT":                 {cfg.HTTPReadTimeout, httpapi.DefaultReadTimeout},
		"HTTP_WRITE_TIMEOUT":                {cfg.HTTPWriteTimeout, httpapi.DefaultWriteTimeout},
		"HTTP_IDLE_TIMEOUT":                 {cfg.HTTPIdleTimeout, httpapi.DefaultIdleTimeout},
		"HTTP_MAX_HEADER_BYTES":             {cfg.HTTPMaxHeaderBytes, httpapi.DefaultMaxHeaderBytes},
		"HTTP_MAX_CONNS":                    {cfg.HTTPMaxConns, httpapi.DefaultMaxConns},
		"STREAMS_PER_TOKEN":                 {cfg.StreamsPerToken, httpapi.DefaultStreamsPerToken},
		"STREAMS_PER_TENANT":                {cfg.StreamsPerTenant, httpapi.DefaultStreamsPerTenant},
		"STREAM_MAX_LIFETIME":               {cfg.StreamMaxLifetime, httpapi.DefaultStreamLifetime},
		"BILLING_TIMEOUT":                   {cfg.BillingTimeout, billing.DefaultTimeout},
		"READ_MAX_LAG":                      {cfg.ReadMaxLag, queries.DefaultReplicaMaxLag},
		"STREAM_SOURCE":                     {cfg.StreamSource, config.StreamSourcePostgres},
		"WEBHOOK_TIMEOUT":                   {cfg.WebhookTimeout, webhook.DefaultTimeout},
		"WEBHOOK_MAX_ENDPOINTS":             {cfg.WebhookMaxEndpoints, webhook.DefaultMaxEndpoints},
		"WEBHOOK_MAX_INFLIGHT_PER_TENANT":   {cfg.WebhookMaxInflightPerTenant, webhook.DefaultMaxInflightPerTenant},
		"WEBHOOK_MAX_INFLIGHT_PER_ENDPOINT": {cfg.WebhookMaxInflightPerEndpoint, webhook.DefaultMaxInflightPerEndpoint},
		"WEBHOOK_BREAKER_THRESHOLD":         {cfg.WebhookBreakerThreshold, webhook.DefaultBreakerThreshold},
		"WEBHOOK_BREAKER_COOLDOWN":          {cfg.WebhookBreakerCooldown, webhook.DefaultBreakerCooldown},
		"WEBHOOK_BREAKER_MAX_COOLDOWN":      {cfg.WebhookBreakerMaxCooldown, webhook.DefaultBreakerMaxCooldown},
		"WEBHOOK_RECOVER_INTERVAL":          {cfg.WebhookRecoverInterval, webhook.DefaultRecoverInterval},
		"NATS_STREAM":                       {cfg.NATSStream, natsink.DefaultStream},
		"NATS_STORAGE":                      {cfg.NATSStorage, natsink.DefaultStorage},
		"NATS_REPLICAS":                     {cfg.NATSReplicas, natsink.DefaultReplicas},
		"NATS_MAX_AGE":                      {cfg.NATSMaxAge, natsink.DefaultMaxAge},
		"NATS_DUPLICATE_WINDOW":             {cfg.NATSDuplicateWindow, natsink.DefaultDuplicateWindow},
	} {
		if got, want := fmt.Sprint(pair[0]), fmt.Sprint(pair[1]); got != want {
			t.Errorf("COMPUTE_%s defaults to %s in internal/config but its package's default is %s", name, got, want)
		}
	}
}
