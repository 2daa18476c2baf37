package webhook

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
)

// One opening of an endpoint's breaker is logged once, however many of
// the attempts that were in flight when it opened report it; the next
// opening is logged again.
func TestBreakerOpeningLoggedOnce(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	s := &Service{logger: slog.New(slog.NewTextHandler(&out, nil))}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	until := now.Add(time.Minute)
	d := db.WebhookDeliveryLoadRow{EndpointID: "we_1", TenantID: "acme", Now: now} // loaded before it opened
	for range 5 {
		s.logBreaker(d, db.WebhookEndpointMarkFailingRow{ConsecutiveFailures: 5, BreakerTrips: 1, BreakerOpenUntil: &until})
	}
	require.Equal(t, 1, strings.Count(out.String(), "circuit opened"), out.String())

	later := until.Add(2 * time.Minute)
	d.Now = until.Add(time.Second)
	s.logBreaker(d, db.WebhookEndpointMarkFailingRow{ConsecutiveFailures: 6, BreakerTrips: 2, BreakerOpenUntil: &later})
	require.Equal(t, 2, strings.Count(out.String(), "circuit opened"), out.String())
}
