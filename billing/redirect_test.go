package billing_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/billing"
	"github.com/bettercompute/compute/outbox"
)

// A billing endpoint that answers a redirect has not accepted the window:
// the attempt fails and is retried, and the redirect is not followed. The
// sink followed redirects (the default http.Client): a 302 or 303 (an
// http-to-https rule in front of the receiver, a moved endpoint) turned the
// POST into a body-less GET, whose 200 recorded the window as accepted
// though no receiver ever saw it, so its usage was never billed; a 307 or
// 308 sent the signed window to wherever the Location named.
func TestBillingRedirectIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			t.Parallel()
			f := setup(t, 0)
			var mu sync.Mutex
			var elsewhere []string // requests that followed the redirect
			mux := http.NewServeMux()
			mux.HandleFunc("/billing", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/elsewhere", code)
			})
			mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				elsewhere = append(elsewhere, r.Method)
				mu.Unlock()
				w.WriteHeader(http.StatusOK)
			})
			srv := httptest.NewServer(mux)
			t.Cleanup(srv.Close)
			sink, err := billing.New(f.d.Pool, billing.Config{URL: srv.URL + "/billing", Secret: f.secret}, nil)
			require.NoError(t, err)
			f.billing = outbox.NewDispatcher(f.d.Pool, "redirected", sink, nil)
			f.usedReservation(t)
			f.catchUpUsage(t)

			require.ErrorContains(t, f.stepBilling(t), "not accepted")
			mu.Lock()
			require.Empty(t, elsewhere, "the redirect is not followed")
			mu.Unlock()
			var delivered, status int
			var lastError string
			require.NoError(t, f.d.Pool.QueryRow(f.ctx,
				"SELECT count(*) FILTER (WHERE delivered_at IS NOT NULL), max(last_status), max(last_error) FROM billing_deliveries").Scan(&delivered, &status, &lastError))
			require.Equal(t, [2]int{0, code}, [2]int{delivered, status}, "a redirect is a failed attempt, recorded with its status")
			require.Contains(t, lastError, "redirect to another path on the same host not followed", "the operator sees where it pointed")
			require.False(t, f.passed(t, billing.SinkID, f.lastPosition(t)), "the cursor waits")
		})
	}
}
