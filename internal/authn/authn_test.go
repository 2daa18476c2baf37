package authn

import (
	"context"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func issue(t *testing.T, d *pgtest.DB, id, secret string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		require.NoError(t, q.TenantEnsure(ctx, "acme"))
		_, err := q.ApiTokenCreate(ctx, db.ApiTokenCreateParams{ID: id, TokenHash: HashToken(secret), TenantID: "acme", Identity: "alice", Role: "member"})
		require.NoError(t, err)
		return q.AuthzChangeAppend(ctx, db.AuthzChangeAppendParams{TokenID: id, Change: "created"})
	}))
}

// revoke revokes a token with the statement a revoke runs, which appends
// its revoked change to the feed too.
func revoke(t *testing.T, d *pgtest.DB, id string) {
	t.Helper()
	revoked, err := d.Q.ApiTokenRevokeTree(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, revoked, 1)
}

func TestAuthenticateCachesAndTheFeedEvictsRevokedTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	a := New(d.Pool, CacheTTL)
	require.NoError(t, a.Sync(ctx))
	issue(t, d, "tok_1", "bc_secret-one")

	actor, err := a.Authenticate(ctx, "bc_secret-one")
	require.NoError(t, err)
	require.Equal(t, core.Actor{TokenID: "tok_1", Tenant: "acme", Identity: "alice", Role: core.RoleMember}, actor)

	_, err = a.Authenticate(ctx, "bc_wrong")
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err))
	_, err = a.Authenticate(ctx, "")
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err))

	revoke(t, d, "tok_1")
	_, err = a.Authenticate(ctx, "bc_secret-one")
	require.NoError(t, err, "within the TTL the cache still answers until the feed is read")

	// The feed is read below the cluster-wide snapshot xmin, which any
	// transaction still running elsewhere on the server holds back for a
	// moment: poll, as the production loop does.
	require.Eventually(t, func() bool {
		require.NoError(t, a.Sync(ctx))
		_, err = a.Authenticate(ctx, "bc_secret-one")
		return core.CodeOf(err) == core.CodeUnauthenticated
	}, 10*time.Second, 10*time.Millisecond, "the authz_changes feed evicts the revoked token")
}

func TestCacheEntriesExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	a := New(d.Pool, CacheTTL)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return now }
	issue(t, d, "tok_2", "bc_secret-two")
	_, err := a.Authenticate(ctx, "bc_secret-two")
	require.NoError(t, err)

	// Revoke without the feed being read: only the TTL ends the cached entry.
	revoke(t, d, "tok_2")
	now = now.Add(CacheTTL - time.Second)
	_, err = a.Authenticate(ctx, "bc_secret-two")
	require.NoError(t, err)
	now = now.Add(time.Second)
	_, err = a.Authenticate(ctx, "bc_secret-two")
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err))
}

func TestHashTokenIsSHA256(t *testing.T) {
	t.Parallel()
	// printf 'bc_x' | sha256sum
	require.Equal(t, "37974d2465f3df04783d4ad4087ba001ec4168d222bb3f539d2c43778851a9b9", hex.EncodeToString(HashToken("bc_x")))
	require.NotEqual(t, HashToken("bc_x"), HashToken("bc_y"))
}

// syncUntilRevoked polls the feed until it has applied id's revocation.
func syncUntilRevoked(t *testing.T, a *Authenticator, id string) {
	t.Helper()
	require.Eventually(t, func() bool {
		require.NoError(t, a.Sync(context.Background()))
		a.mu.Lock()
		defer a.mu.Unlock()
		_, ok := a.revoked[id]
		return ok
	}, 10*time.Second, 5*time.Millisecond, "the feed applies the revocation of %s", id)
}

// A revocation applied while a lookup was running must not be undone by
// that lookup caching its (older) answer: the feed evicted nothing, since
// the entry was not there yet, so the token would live on for a whole TTL.
func TestARevocationDuringTheLookupIsNotCachedOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	a := New(d.Pool, CacheTTL)
	require.NoError(t, a.Sync(ctx))
	issue(t, d, "tok_3", "bc_secret-three")

	a.afterLookup = func() { // the row was read as valid; now it is revoked
		a.afterLookup = nil
		revoke(t, d, "tok_3")
		syncUntilRevoked(t, a, "tok_3")
	}
	_, err := a.Authenticate(ctx, "bc_secret-three")
	require.NoError(t, err, "the lookup read the token before the revocation")
	_, err = a.Authenticate(ctx, "bc_secret-three")
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err), "not served from a cache entry written after the revocation")
}

// A failed lookup is remembered for NegativeTTL (bounded by the cache TTL):
// repeating a bad token costs one query, not one per request.
func TestFailedLookupsAreRememberedBriefly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	lookups := 0
	a := New(d.Pool, CacheTTL)
	a.now = func() time.Time { return now }
	a.afterLookup = func() { lookups++ }

	for range 3 {
		_, err := a.Authenticate(ctx, "bc_nope")
		require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err))
	}
	require.Equal(t, 1, lookups)
	now = now.Add(NegativeTTL)
	_, err := a.Authenticate(ctx, "bc_nope")
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err))
	require.Equal(t, 2, lookups, "forgotten after NegativeTTL")

	// Without a cache (TTL 0) nothing is remembered either way.
	a = New(d.Pool, 0)
	a.afterLookup = func() { lookups++ }
	for range 2 {
		_, err := a.Authenticate(ctx, "bc_nope")
		require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err))
	}
	require.Equal(t, 4, lookups)
}

// WatchRevocation fires when the feed applies the token's revocation, at
// once for a revocation applied just before the watch, and never after
// stop.
func TestWatchRevocation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	a := New(d.Pool, CacheTTL)
	require.NoError(t, a.Sync(ctx))
	issue(t, d, "tok_4", "bc_secret-four")
	issue(t, d, "tok_5", "bc_secret-five")

	fired := make(chan string, 4)
	a.WatchRevocation("tok_4", func() { fired <- "tok_4 watch" })
	stop := a.WatchRevocation("tok_5", func() { fired <- "tok_5 stopped watch" })
	stop()
	a.WatchRevocation("tok_5", func() { fired <- "tok_5 watch" })
	require.Empty(t, fired, "nothing is revoked yet")

	revoke(t, d, "tok_4")
	syncUntilRevoked(t, a, "tok_4")
	require.Equal(t, "tok_4 watch", <-fired)
	// A watch registered after the revocation was applied fires at once.
	a.WatchRevocation("tok_4", func() { fired <- "late tok_4 watch" })
	require.Equal(t, "late tok_4 watch", <-fired)

	revoke(t, d, "tok_5")
	syncUntilRevoked(t, a, "tok_5")
	require.Equal(t, "tok_5 watch", <-fired)
	require.Empty(t, fired, "the stopped watch did not fire")
}

// Revoked applies a revocation this process committed at once, without
// the feed: the token's cache entry goes (its next lookup reads the
// database, which refuses it) and its watches fire, the late one too.
func TestRevokedAppliesARevocationWithoutTheFeed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	a := New(d.Pool, CacheTTL)
	require.NoError(t, a.Sync(ctx))
	issue(t, d, "tok_r", "bc_secret-r")
	_, err := a.Authenticate(ctx, "bc_secret-r")
	require.NoError(t, err)
	fired := make(chan string, 2)
	a.WatchRevocation("tok_r", func() { fired <- "watch" })

	revoke(t, d, "tok_r")
	_, err = a.Authenticate(ctx, "bc_secret-r")
	require.NoError(t, err, "the cache answers until told")
	a.Revoked([]string{"tok_r"})
	_, err = a.Authenticate(ctx, "bc_secret-r")
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err))
	require.Equal(t, "watch", <-fired)
	a.WatchRevocation("tok_r", func() { fired <- "late watch" })
	require.Equal(t, "late watch", <-fired)
}

// AuthenticateCached answers only from the cache.
func TestAuthenticateCached(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	a := New(d.Pool, CacheTTL)
	issue(t, d, "tok_6", "bc_secret-six")
	_, ok := a.AuthenticateCached("bc_secret-six")
	require.False(t, ok, "not looked up yet")
	_, err := a.Authenticate(ctx, "bc_secret-six")
	require.NoError(t, err)
	actor, ok := a.AuthenticateCached("bc_secret-six")
	require.True(t, ok)
	require.Equal(t, "tok_6", actor.TokenID)
	_, ok = a.AuthenticateCached("bc_other")
	require.False(t, ok)
}

// A token with an expiry: its cache entry ends at the expiry, not a TTL
// later; the lookup after it is refused by the database once business time
// has passed the expiry; and a watch (an open event stream) fires at the
// expiry, once, even if a revocation follows.
func TestExpiringTokenEndsItsCacheEntryAndItsWatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	a := New(d.Pool, CacheTTL)
	require.NoError(t, a.Sync(ctx))
	clk := fakeClock(a)
	const life = 10 * time.Second
	require.NoError(t, pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		require.NoError(t, q.TenantEnsure(ctx, "acme"))
		expiry := d.Now(t).Add(life)
		_, err := q.ApiTokenCreate(ctx, db.ApiTokenCreateParams{ID: "tok_x", TokenHash: HashToken("bc_expiring"), TenantID: "acme",
			Identity: "ci", Role: "member", ExpiresAt: &expiry})
		require.NoError(t, err)
		return q.AuthzChangeAppend(ctx, db.AuthzChangeAppendParams{TokenID: "tok_x", Change: "created"})
	}))

	_, err := a.Authenticate(ctx, "bc_expiring")
	require.NoError(t, err)
	revokedCalls := 0
	stop := a.WatchRevocation("tok_x", func() { revokedCalls++ })
	defer stop()
	require.Equal(t, []time.Duration{life}, clk.timers, "the watch is timed to the token's expiry")

	clk.now = clk.now.Add(life - time.Second)
	_, ok := a.AuthenticateCached("bc_expiring")
	require.True(t, ok, "cached until its expiry")
	clk.now = clk.now.Add(time.Second)
	_, ok = a.AuthenticateCached("bc_expiring")
	require.False(t, ok, "the cache entry ends at the expiry, not CacheTTL after the lookup")

	d.AdvanceSimClock(t, life)
	_, err = a.Authenticate(ctx, "bc_expiring")
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err), "the database refuses it past its expiry")

	clk.fire()
	require.Equal(t, 1, revokedCalls, "the watch fired at the expiry")
	revoke(t, d, "tok_x")
	syncUntilRevoked(t, a, "tok_x")
	require.Equal(t, 1, revokedCalls, "once")
}

// A token this process learnt of from a stream ticket, never looked up
// here, gets its watches timed to the expiry the ticket's redemption
// reported (NoteExpiry); a token without a noted expiry gets no timer.
func TestNotedExpiryTimesTheWatches(t *testing.T) {
	t.Parallel()
	a := New(nil, CacheTTL)
	clk := fakeClock(a)
	stop := a.WatchRevocation("tok_never_seen", func() { t.Fatal("no expiry known: nothing fires") })
	stop()
	require.Empty(t, clk.timers)

	a.NoteExpiry("tok_ticket", 90*time.Second)
	clk.now = clk.now.Add(30 * time.Second) // the stream opens a little later
	fired := 0
	stop = a.WatchRevocation("tok_ticket", func() { fired++ })
	defer stop()
	require.Equal(t, []time.Duration{time.Minute}, clk.timers, "timed to the noted expiry, from when it was noted")
	clk.fire()
	require.Equal(t, 1, fired)
}

// testClock is an Authenticator's process clock and timers, under a test's
// control: Now moves only when the test moves it, and a timer fires only
// when the test calls fire.
type testClock struct {
	now    time.Time
	timers []time.Duration // every timer started, by its duration
	fire   func()          // the last timer's function
}

// fakeClock puts a's clock and timers under the returned testClock.
func fakeClock(a *Authenticator) *testClock {
	c := &testClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	a.now = func() time.Time { return c.now }
	a.afterFunc = func(d time.Duration, f func()) func() bool {
		c.timers, c.fire = append(c.timers, d), f
		return func() bool { return true }
	}
	return c
}

// The feed's first Sync only finds where the feed ends, skipping every
// change before it. A process serves requests while that first Sync is
// still to run (it runs in its own goroutine, and retries while the
// database is away), so a token looked up then, and revoked before the
// first Sync, must not stay cached, nor its streams stay open: the
// revocation is after where the feed starts, and a later Sync applies it.
func TestALookupBeforeTheFirstSyncMissesNoRevocation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	a := New(d.Pool, CacheTTL)
	issue(t, d, "tok_9", "bc_secret-nine")

	_, err := a.Authenticate(ctx, "bc_secret-nine")
	require.NoError(t, err, "served before the feed was ever read")
	revoked := make(chan struct{})
	stop := a.WatchRevocation("tok_9", func() { close(revoked) })
	defer stop()
	revoke(t, d, "tok_9")

	require.Eventually(t, func() bool {
		require.NoError(t, a.Sync(ctx))
		select {
		case <-revoked:
		default:
			return false
		}
		_, err := a.Authenticate(ctx, "bc_secret-nine")
		return core.CodeOf(err) == core.CodeUnauthenticated
	}, 10*time.Second, 10*time.Millisecond, "the feed applies the revocation: the watch fires and the cache forgets the token")
}
