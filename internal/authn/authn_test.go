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
	"github.com/bettercompute/compute/internal/pgtest"
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

func revoke(t *testing.T, d *pgtest.DB, id string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		_, err := q.ApiTokenRevoke(ctx, id)
		require.NoError(t, err)
		return q.AuthzChangeAppend(ctx, db.AuthzChangeAppendParams{TokenID: id, Change: "revoked"})
	}))
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
