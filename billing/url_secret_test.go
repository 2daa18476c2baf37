package billing_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/billing"
	"github.com/bettercompute/compute/outbox"
)

// A billing URL often carries the receiver's own credential, in its path
// or query (https://billing.example.com/usage?api_key=…). A failed attempt
// records and logs its cause with the URL's scheme and host only: the sink
// wrote the whole URL, query and path, into billing_deliveries.last_error
// and into a WARN line on every attempt while the receiver was down, as
// webhook deliveries had stopped doing (webhook's
// TestLoggedAttemptErrorKeepsNoURLSecret).
func TestBillingAttemptErrorKeepsNoURLSecret(t *testing.T) {
	t.Parallel()
	f := setup(t, 0)
	down := httptest.NewServer(f.ep)
	host := down.Listener.Addr().String()
	down.Close() // refused: the error carries the URL
	var logs bytes.Buffer
	sink, err := billing.New(f.d.Pool, billing.Config{
		URL:    "http://biller:pw@" + host + "/hooks/s3cr3t-path/usage?api_key=t0k3n",
		Secret: f.secret,
	}, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	f.billing = outbox.NewDispatcher(f.d.Pool, "down", sink, nil)
	f.usedReservation(t)
	f.catchUpUsage(t)
	require.ErrorContains(t, f.stepBilling(t), "not accepted")
	f.requireNoSecret(t, "http://"+host, "connection refused", logs.String())

	// A receiver behind an http-to-https redirect, which repeats the URL:
	// the redirect's target is named by scheme and host only.
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://billing.example.com"+r.URL.RequestURI(), http.StatusMovedPermanently)
	}))
	t.Cleanup(redirect.Close)
	logs.Reset()
	sink, err = billing.New(f.d.Pool, billing.Config{
		URL:    "http://biller:pw@" + redirect.Listener.Addr().String() + "/hooks/s3cr3t-path/usage?api_key=t0k3n",
		Secret: f.secret,
	}, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	f.billing = outbox.NewDispatcher(f.d.Pool, "down", sink, nil)
	f.d.AdvanceSimClock(t, time.Minute)
	require.ErrorContains(t, f.stepBilling(t), "not accepted")
	f.requireNoSecret(t, "https://billing.example.com", "HTTP 301", logs.String())
}

// requireNoSecret checks the last attempt's recorded error and the log:
// they name where (host) and why, and none of the URL's secrets.
func (f *fixture) requireNoSecret(t *testing.T, host, why, logs string) {
	t.Helper()
	var lastError string
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT last_error FROM billing_deliveries").Scan(&lastError))
	require.Contains(t, lastError, host, "the cause names the host")
	require.Contains(t, lastError, why)
	require.Contains(t, logs, host)
	for _, secret := range []string{"pw", "s3cr3t", "t0k3n", "api_key", "hooks"} {
		require.NotContains(t, lastError, secret)
		require.NotContains(t, logs, secret)
	}
}
