package webhook_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/webhook"
)

// A new URL is a receiver that has never answered: patching it makes the
// endpoint suspect again (answered false) until the new receiver's first
// 2xx. It kept answered, so a tenant could point an endpoint proven at one
// URL at a receiver that hangs and have every slot of its cap held by it
// (4 here) instead of its suspect share (2), leaving none for its
// endpoints that answer. A patch of anything else keeps answered.
func TestURLChangeMakesTheEndpointSuspectAgain(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{MaxInflightPerTenant: 4, MaxInflightPerEndpoint: 4, SlotWait: -1, Timeout: time.Minute})
	ctx := context.Background()
	ok := newReceiver(t, respond{status: http.StatusOK})
	ep := f.createEndpoint(t, acmeMember, ok.URL, "instance.failed")
	f.scheduled(t, ep.ID, f.emit(t, "acme", "instance.failed"))
	f.runWorker(t)
	require.Len(t, ok.requests(), 1)
	answered := func() bool {
		var a bool
		require.NoError(t, f.pg.Pool.QueryRow(ctx, `SELECT answered FROM webhook_endpoints WHERE id = $1`, ep.ID).Scan(&a))
		return a
	}
	require.True(t, answered())

	desc := "still the same receiver"
	_, err := f.svc.PatchEndpoint(ctx, acmeMember, ep.ID, webhook.PatchEndpoint{Description: &desc})
	require.NoError(t, err)
	require.True(t, answered(), "a patch that keeps the URL keeps answered")

	slow := newGate(t)
	_, err = f.svc.PatchEndpoint(ctx, acmeMember, ep.ID, webhook.PatchEndpoint{URL: &slow.URL})
	require.NoError(t, err)
	require.False(t, answered(), "a new URL has never answered")

	var ids []uuid.UUID
	for range 4 {
		ids = append(ids, f.scheduled(t, ep.ID, f.emit(t, "acme", "instance.failed")).ID)
	}
	ran := make(chan struct{})
	go func() { defer close(ran); _, _ = f.worker.RunOnce(ctx) }()
	t.Cleanup(func() { slow.release(); <-ran })
	require.Eventually(t, func() bool {
		now, deferred := f.pg.Now(t), 0
		for _, id := range ids {
			if f.notBefore(t, id).After(now) {
				deferred++
			}
		}
		return deferred == 2 && slow.held.Load() == 2
	}, 20*time.Second, 10*time.Millisecond, "the new URL's requests hold the tenant's suspect share, no more")
}
