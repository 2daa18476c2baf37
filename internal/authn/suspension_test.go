package authn

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// setSuspended suspends or resumes tenant acme with the statements the
// commands run: the tenant row, then one change per token to the feed.
func setSuspended(t *testing.T, d *pgtest.DB, suspended bool) {
	t.Helper()
	ctx := context.Background()
	change := "resumed"
	if suspended {
		_, err := d.Q.TenantSuspend(ctx, db.TenantSuspendParams{ID: "acme", Reason: "invoice unpaid"})
		require.NoError(t, err)
		change = "suspended"
	} else {
		_, err := d.Q.TenantResume(ctx, "acme")
		require.NoError(t, err)
	}
	_, err := d.Q.AuthzChangeAppendTenant(ctx, db.AuthzChangeAppendTenantParams{Change: change, TenantID: "acme"})
	require.NoError(t, err)
}

// A token of a suspended tenant is refused with TENANT_SUSPENDED naming
// the reason once the feed brings the suspension, though it was cached;
// its watches fire, at once for a late one; the refusal is cached (not
// offered to AuthenticateCached) until the feed brings the resume, after
// which the token works and a new watch waits again.
func TestTheFeedAppliesTenantSuspension(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	a := New(d.Pool, CacheTTL)
	require.NoError(t, a.Sync(ctx))
	issue(t, d, "tok_s", "bc_secret-s")
	_, err := a.Authenticate(ctx, "bc_secret-s")
	require.NoError(t, err)
	fired := make(chan string, 2)
	a.WatchRevocation("tok_s", func() { fired <- "watch" })

	setSuspended(t, d, true)
	_, err = a.Authenticate(ctx, "bc_secret-s")
	require.NoError(t, err, "the cache answers until the feed is read")
	require.Eventually(t, func() bool {
		require.NoError(t, a.Sync(ctx))
		_, err := a.Authenticate(ctx, "bc_secret-s")
		return core.CodeOf(err) == core.CodeTenantSuspended
	}, 10*time.Second, 5*time.Millisecond)
	_, err = a.Authenticate(ctx, "bc_secret-s")
	require.Contains(t, err.Error(), "invoice unpaid")
	// The lookup may see the suspension before the feed does (the feed
	// reads a change once every older transaction of the server ended).
	require.Eventually(t, func() bool {
		require.NoError(t, a.Sync(ctx))
		select {
		case got := <-fired:
			require.Equal(t, "watch", got)
			return true
		default:
			return false
		}
	}, 10*time.Second, 5*time.Millisecond, "the feed's suspended change fires the watch")
	a.WatchRevocation("tok_s", func() { fired <- "late watch" })
	require.Equal(t, "late watch", <-fired)
	_, ok := a.AuthenticateCached("bc_secret-s")
	require.False(t, ok, "a cached refusal is no cached actor")
	// The feed's change evicted the lookup's refusal; cache it again, so
	// that only the feed's resume can let the token in below.
	_, err = a.Authenticate(ctx, "bc_secret-s")
	require.Equal(t, core.CodeTenantSuspended, core.CodeOf(err))

	setSuspended(t, d, false)
	require.Eventually(t, func() bool {
		require.NoError(t, a.Sync(ctx))
		_, err := a.Authenticate(ctx, "bc_secret-s")
		return err == nil
	}, 10*time.Second, 5*time.Millisecond, "the resume evicts the cached refusal")
	stop := a.WatchRevocation("tok_s", func() { fired <- "watch after resume" })
	defer stop()
	require.Empty(t, fired, "a resumed token's watch waits again")
}

// A lookup that finds the tenant resumed before the feed brings the
// resume (an older transaction on the server holds the feed back) is the
// newer answer: the token works and a new watch of it waits, rather than
// firing at once for the suspension the feed still remembers.
func TestALookupThatSeesTheResumeFirstKeepsWatchesWaiting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	a := New(d.Pool, CacheTTL)
	require.NoError(t, a.Sync(ctx))
	issue(t, d, "tok_r", "bc_secret-r")
	setSuspended(t, d, true)
	require.Eventually(t, func() bool {
		require.NoError(t, a.Sync(ctx))
		a.mu.Lock()
		defer a.mu.Unlock()
		_, ok := a.suspended["tok_r"]
		return ok
	}, 10*time.Second, 5*time.Millisecond, "the feed brings the suspension")

	blocker, err := d.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = blocker.Rollback(ctx) }()
	_, err = blocker.Exec(ctx, "SELECT pg_current_xact_id()")
	require.NoError(t, err)
	setSuspended(t, d, false)
	require.NoError(t, a.Sync(ctx))
	a.mu.Lock()
	_, stillSuspended := a.suspended["tok_r"]
	a.mu.Unlock()
	require.True(t, stillSuspended, "the open transaction holds the feed before the resume")

	_, err = a.Authenticate(ctx, "bc_secret-r")
	require.NoError(t, err, "the lookup sees the resume")
	fired := make(chan struct{}, 1)
	stop := a.WatchRevocation("tok_r", func() { fired <- struct{}{} })
	defer stop()
	require.Empty(t, fired, "the watch waits: the lookup showed the suspension is over")

	require.NoError(t, blocker.Rollback(ctx))
	require.NoError(t, a.Sync(ctx))
	require.Empty(t, fired, "the feed's resume changes nothing")
}
