package billing_test

import (
	"bytes"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/billing"
	"github.com/bettercompute/compute/outbox"
)

// The dispatcher's log tells a receiver that was never reached from one
// that answered and refused the window: it said "refused a usage window"
// for a refused connection too (no status at all), and an operator reading
// it looked for a fault in the consumer instead of in the network or the
// receiver's process.
func TestBillingLogTellsUnreachableFromRefused(t *testing.T) {
	t.Parallel()
	f := setup(t, 1) // the endpoint answers the first request 503
	var logs bytes.Buffer
	logTo := func(url string) {
		sink, err := billing.New(f.d.Pool, billing.Config{URL: url, Secret: f.secret}, slog.New(slog.NewTextHandler(&logs, nil)))
		require.NoError(t, err)
		f.billing = outbox.NewDispatcher(f.d.Pool, "log", sink, nil)
	}

	down := httptest.NewServer(f.ep)
	down.Close() // nothing listens: connection refused
	logTo(down.URL)
	f.usedReservation(t)
	f.catchUpUsage(t)
	require.ErrorContains(t, f.stepBilling(t), "not accepted")
	require.Contains(t, logs.String(), `msg="billing endpoint unreachable; retrying"`)
	require.Contains(t, logs.String(), "connection refused")
	require.NotContains(t, logs.String(), "refused a usage window")
	require.NotContains(t, logs.String(), "status=")

	up := httptest.NewServer(f.ep)
	t.Cleanup(up.Close)
	logs.Reset()
	logTo(up.URL)
	f.d.AdvanceSimClock(t, billing.DefaultSchedule[0]) // the retry is due
	require.ErrorContains(t, f.stepBilling(t), "not accepted")
	require.Contains(t, logs.String(), `msg="billing endpoint refused a usage window; retrying"`)
	require.Contains(t, logs.String(), "status=503")
	require.NotContains(t, logs.String(), "unreachable")
}
