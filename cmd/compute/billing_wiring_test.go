package main

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/billing"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/webhook"
)

// The dispatcher role delivers the billing sink, under its own lease and
// cursor, exactly when COMPUTE_BILLING_URL is set.
func TestSinksIncludeBillingWhenConfigured(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	ids := func(cfg config.Config) []string {
		var out []string
		for _, d := range sinks(nil, "test-process", newServices(nil, cfg, logger, nil), nil, nil, logger) {
			out = append(out, d.SinkIDs()...)
		}
		return out
	}
	want := []string{webhook.SinkID}
	for _, p := range projections.All() {
		want = append(want, p.ID())
	}
	require.Equal(t, want, ids(config.Config{}), "every sink once")
	require.NotContains(t, ids(config.Config{}), billing.SinkID)
	require.Contains(t, ids(config.Config{BillingURL: "https://billing.example.com/usage", BillingSecret: webhook.NewSecret()}),
		billing.SinkID)
}
