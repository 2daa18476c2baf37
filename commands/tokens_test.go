package commands_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// The database comes from the package's one TestMain, in main_test.go.

// tokenOperator issues tokens as the system does (`compute tokens create
// --database`): with no token of its own, so the tokens it issues have no
// issuer. Tests of issuers act as a token they issued (tokenActor).
var tokenOperator = core.Actor{Tenant: "ops", Identity: "root", Role: core.RoleOperator}

func tokenSetup(t *testing.T) (*commands.Tokens, *pgtest.DB) {
	t.Helper()
	pg := pgtest.New(t)
	return &commands.Tokens{Pool: pg.Pool}, pg
}

// tokenChanges reads the authz_changes feed of one token directly, without
// the reader's snapshot-xmin frontier, which other tests' open transactions
// in the same cluster could hold back.
func tokenChanges(t *testing.T, pg *pgtest.DB, id string) []string {
	t.Helper()
	rows, err := pg.Pool.Query(context.Background(),
		"SELECT change FROM authz_changes WHERE token_id = $1 ORDER BY txid, seq", id)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var c string
		require.NoError(t, rows.Scan(&c))
		out = append(out, c)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestCreateTokenStoresOnlyTheHash(t *testing.T) {
	t.Parallel()
	tokens, pg := tokenSetup(t)
	ctx := context.Background()

	created, err := tokens.CreateToken(ctx, tokenOperator, "acme", "alice@acme", core.RoleMember)
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`^bc_[A-Za-z0-9_-]{43}$`), created.Secret)
	require.Regexp(t, regexp.MustCompile(`^tok_[0-9a-f]{24}$`), created.ID)
	require.Equal(t, "acme", created.Tenant)
	require.Equal(t, "alice@acme", created.Identity)
	require.Equal(t, core.RoleMember, created.Role)
	require.True(t, created.CreatedAt.Equal(pgtest.SimEpoch), "created at business time")

	// The tenant was created in passing.
	_, err = pg.Q.TenantGet(ctx, "acme")
	require.NoError(t, err)

	// The secret resolves through its hash, and the secret itself is
	// nowhere in the table.
	row, err := pg.Q.ApiTokenByHash(ctx, authn.HashToken(created.Secret))
	require.NoError(t, err)
	require.Equal(t, created.ID, row.ID)
	var stored int
	require.NoError(t, pg.Pool.QueryRow(ctx,
		"SELECT count(*) FROM api_tokens WHERE position($1::bytea in token_hash) > 0", []byte(created.Secret)).Scan(&stored))
	require.Zero(t, stored)

	require.Equal(t, []string{"created"}, tokenChanges(t, pg, created.ID))

	// Two tokens never share a secret or an id.
	second, err := tokens.CreateToken(ctx, tokenOperator, "acme", "alice@acme", core.RoleMember)
	require.NoError(t, err)
	require.NotEqual(t, created.Secret, second.Secret)
	require.NotEqual(t, created.ID, second.ID)
}

func TestCreateTokenValidates(t *testing.T) {
	t.Parallel()
	tokens, pg := tokenSetup(t)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		actor            core.Actor
		tenant, identity string
		role             core.Role
		code             core.Code
		mention          string
	}{
		"member may not":      {core.Actor{Tenant: "t1", Role: core.RoleMember}, "t1", "a", core.RoleViewer, core.CodePermissionDenied, "operator"},
		"viewer may not":      {core.Actor{Tenant: "t1", Role: core.RoleViewer}, "t1", "a", core.RoleViewer, core.CodePermissionDenied, "operator"},
		"upper-case tenant":   {tokenOperator, "T1", "a", core.RoleViewer, core.CodeInvalidArgument, "tenant"},
		"empty tenant":        {tokenOperator, "", "a", core.RoleViewer, core.CodeInvalidArgument, "tenant"},
		"leading dash tenant": {tokenOperator, "-t1", "a", core.RoleViewer, core.CodeInvalidArgument, "tenant"},
		"64-char tenant":      {tokenOperator, strings.Repeat("t", 64), "a", core.RoleViewer, core.CodeInvalidArgument, "tenant"},
		"blank identity":      {tokenOperator, "t1", "  ", core.RoleViewer, core.CodeInvalidArgument, "identity"},
		"control in identity": {tokenOperator, "t1", "a\nb", core.RoleViewer, core.CodeInvalidArgument, "identity"},
		"overlong identity":   {tokenOperator, "t1", strings.Repeat("a", 257), core.RoleViewer, core.CodeInvalidArgument, "identity"},
		"unknown role":        {tokenOperator, "t1", "a", core.Role("admin"), core.CodeInvalidArgument, "role"},
		"empty role":          {tokenOperator, "t1", "a", core.Role(""), core.CodeInvalidArgument, "role"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tokens.CreateToken(ctx, tc.actor, tc.tenant, tc.identity, tc.role)
			require.Error(t, err)
			require.Equal(t, tc.code, core.CodeOf(err))
			require.Contains(t, err.Error(), tc.mention)
		})
	}
	// Nothing was written by any refused call.
	_, err := pg.Q.TenantGet(ctx, "t1")
	require.ErrorIs(t, err, pgx.ErrNoRows)

	// The longest valid tenant id is accepted.
	_, err = tokens.CreateToken(ctx, tokenOperator, strings.Repeat("t", 63), "a", core.RoleViewer)
	require.NoError(t, err)
}

func TestGetTokenHidesOtherTenants(t *testing.T) {
	t.Parallel()
	tokens, _ := tokenSetup(t)
	ctx := context.Background()
	created, err := tokens.CreateToken(ctx, tokenOperator, "acme", "alice", core.RoleMember)
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		actor core.Actor
		id    string
		code  core.Code // "" means found
	}{
		"operator of another tenant": {tokenOperator, created.ID, ""},
		"member of the tenant":       {core.Actor{Tenant: "acme", Role: core.RoleMember}, created.ID, ""},
		"viewer of the tenant":       {core.Actor{Tenant: "acme", Role: core.RoleViewer}, created.ID, ""},
		"member of another tenant":   {core.Actor{Tenant: "globex", Role: core.RoleMember}, created.ID, core.CodeNotFound},
		"unknown id":                 {core.Actor{Tenant: "globex", Role: core.RoleMember}, "tok_missing", core.CodeNotFound},
	} {
		t.Run(name, func(t *testing.T) {
			info, err := tokens.GetToken(ctx, tc.actor, tc.id)
			if tc.code != "" {
				require.Equal(t, tc.code, core.CodeOf(err), "err: %v", err)
				require.NotContains(t, err.Error(), "acme", "never a hint of the owner")
				return
			}
			require.NoError(t, err)
			require.Equal(t, created.TokenInfo, info)
		})
	}
}

func TestRevokeToken(t *testing.T) {
	t.Parallel()
	tokens, pg := tokenSetup(t)
	ctx := context.Background()
	created, err := tokens.CreateToken(ctx, tokenOperator, "acme", "ci", core.RoleMember)
	require.NoError(t, err)

	_, err = tokens.RevokeToken(ctx, core.Actor{Tenant: "acme", Role: core.RoleMember}, created.ID)
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err))
	_, err = pg.Q.ApiTokenByHash(ctx, authn.HashToken(created.Secret))
	require.NoError(t, err, "a refused revoke leaves the token valid")

	pg.AdvanceSimClock(t, 90*time.Second)
	revoked, err := tokens.RevokeToken(ctx, tokenOperator, created.ID)
	require.NoError(t, err)
	require.NotNil(t, revoked.RevokedAt)
	require.Zero(t, revoked.DescendantsRevoked, "it issued nothing")
	require.True(t, revoked.RevokedAt.Equal(pg.Now(t)), "revoked at business time")
	_, err = pg.Q.ApiTokenByHash(ctx, authn.HashToken(created.Secret))
	require.Error(t, err, "a revoked secret no longer resolves")
	require.Equal(t, []string{"created", "revoked"}, tokenChanges(t, pg, created.ID))

	// Again: same answer, no second change in the feed.
	again, err := tokens.RevokeToken(ctx, tokenOperator, created.ID)
	require.NoError(t, err)
	require.Equal(t, []string{created.ID}, revoked.RevokedIDs)
	require.Equal(t, revoked.TokenInfo, again.TokenInfo)
	require.Zero(t, again.DescendantsRevoked)
	require.Empty(t, again.RevokedIDs, "nothing revoked now")
	require.Equal(t, []string{"created", "revoked"}, tokenChanges(t, pg, created.ID))

	_, err = tokens.RevokeToken(ctx, tokenOperator, "tok_missing")
	require.Equal(t, core.CodeNotFound, core.CodeOf(err))
}
