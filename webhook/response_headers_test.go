package webhook_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/webhook"
)

// A receiver that answers 200 with a megabyte of headers: the attempt is a
// failure, "response headers too large", not a success. Before the client
// capped response headers it read up to net/http's default of 10 MiB per
// attempt, all of it held in memory: 24 such endpoints took a demo server
// from 45 MB to 279 MB resident, and the attempt counted as delivered.
func TestHugeResponseHeadersFailTheAttempt(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for i := range 256 {
			w.Header().Set(fmt.Sprintf("X-Pad-%d", i), strings.Repeat("a", 4096))
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rcv.Close)
	ep := f.createEndpoint(t, acmeMember, rcv.URL, "reservation.booked")
	d := f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.booked"))

	require.Equal(t, 1, f.runWorker(t))
	got := f.delivery(t, d.ID)
	require.Equal(t, webhook.StatePending, got.State, "a 2xx with a megabyte of headers is not a delivery")
	require.NotNil(t, got.LastError)
	require.Equal(t, "response headers too large", *got.LastError)
}
