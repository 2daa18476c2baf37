package webhook_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/webhook"
)

// A create retried with its Idempotency-Key (a client that timed out, 50
// of them at once) registers one endpoint, and every answer is the first
// one's: its id and the secret it signs with. The same key with another
// request is refused.
func TestCreateWithAnIdempotencyKeyRegistersOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	in := webhook.CreateEndpoint{URL: "https://hooks.acme.example/once", EventTypes: []string{"reservation.booked"},
		IdempotencyKey: "retry-me"}

	var wg sync.WaitGroup
	got := make([]webhook.EndpointWithSecret, 50)
	errs := make([]error, len(got))
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = f.svc.CreateEndpoint(ctx, acmeMember, in)
		}()
	}
	wg.Wait()
	for i := range got {
		require.NoError(t, errs[i])
		require.Equal(t, got[0].ID, got[i].ID)
		require.Equal(t, got[0].Secret, got[i].Secret)
	}
	require.NotEmpty(t, got[0].Secret)
	page, err := f.svc.ListEndpoints(ctx, acmeMember, "", 0)
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	requireEvent(t, f, webhook.EventEndpointCreated, got[0].ID, 1)

	other := in
	other.URL = "https://hooks.acme.example/another"
	_, err = f.svc.CreateEndpoint(ctx, acmeMember, other)
	require.Equal(t, core.CodeIdempotencyKeyReused, core.CodeOf(err))

	// Without a key, a second create is a second endpoint.
	in.IdempotencyKey = ""
	_, err = f.svc.CreateEndpoint(ctx, acmeMember, in)
	require.NoError(t, err)
	page, err = f.svc.ListEndpoints(ctx, acmeMember, "", 0)
	require.NoError(t, err)
	require.Len(t, page.Items, 2)
}
