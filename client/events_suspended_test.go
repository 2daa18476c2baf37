package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/client"
)

// A suspended tenant's stream ends with a TENANT_SUSPENDED error frame, and
// every reconnect is answered 403 TENANT_SUSPENDED until an operator resumes
// the tenant: Subscribe returns that error at once, as it does a revoked
// token's UNAUTHENTICATED, instead of reconnecting with backoff for as long
// as the suspension lasts (which `compute events tail` did, printing
// "resuming in …" every time, never exiting).
func TestSubscribeEndsWhenTheTenantIsSuspended(t *testing.T) {
	t.Parallel()
	const msg = "tenant acme is suspended: invoice 2026-11 unpaid"
	for name, answer := range map[string]func(w http.ResponseWriter){
		"error frame": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "retry: 10\nid: c0\n\nevent: error\ndata: {\"error\":{\"code\":\"TENANT_SUSPENDED\",\"message\":%q}}\n\n", msg)
		},
		"refused reconnect": func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"error":{"code":"TENANT_SUSPENDED","message":%q}}`, msg)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var streams atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				streams.Add(1)
				answer(w)
			}))
			t.Cleanup(srv.Close)
			api, err := client.New(srv.URL, "bc_secret", client.Options{
				Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = api.Subscribe(ctx, client.SubscribeOptions{}, func(client.Event) error { return nil })
			require.True(t, client.IsCode(err, client.ErrorCodeTENANTSUSPENDED), "%v", err)
			require.Contains(t, err.Error(), msg)
			require.EqualValues(t, 1, streams.Load(), "no reconnect")
		})
	}
}
