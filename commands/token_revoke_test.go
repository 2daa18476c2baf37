package commands_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// tokenActor is who a request authenticated with created acts as.
func tokenActor(created commands.TokenCreated) core.Actor {
	return core.Actor{TokenID: created.ID, Tenant: created.Tenant, Identity: created.Identity, Role: created.Role}
}

// tokenValid reports whether a secret still authenticates.
func tokenValid(t *testing.T, pg *pgtest.DB, created commands.TokenCreated) bool {
	t.Helper()
	_, err := pg.Q.ApiTokenByHash(context.Background(), authn.HashToken(created.Secret))
	return err == nil
}

// issue has by issue a token for identity (an operator's, so that it can
// issue tokens in turn).
func issue(t *testing.T, tokens *commands.Tokens, by core.Actor, identity string) commands.TokenCreated {
	t.Helper()
	created, err := tokens.CreateToken(context.Background(), by, "ops", identity, core.RoleOperator)
	require.NoError(t, err)
	return created
}

// Revoking a token revokes the tokens it issued and theirs, each as a
// direct revoke would (the revocation feed, its stream tickets), and
// leaves every other tree alone. The answer counts the descendants it
// revoked; a token revoked before is not counted again.
func TestRevokeRevokesEveryDescendant(t *testing.T) {
	t.Parallel()
	tokens, pg := tokenSetup(t)
	ctx := context.Background()

	root := issue(t, tokens, tokenOperator, "root")
	child := issue(t, tokens, tokenActor(root), "child")
	grandchild := issue(t, tokens, tokenActor(child), "grandchild")
	sibling := issue(t, tokens, tokenActor(root), "sibling")
	other := issue(t, tokens, tokenOperator, "other")
	othersChild := issue(t, tokens, tokenActor(other), "others-child")

	require.Nil(t, root.IssuedBy, "the system issued it")
	require.Equal(t, root.ID, *child.IssuedBy)
	require.Equal(t, child.ID, *grandchild.IssuedBy)
	got, err := tokens.GetToken(ctx, tokenOperator, grandchild.ID)
	require.NoError(t, err)
	require.Equal(t, child.ID, *got.IssuedBy, "the issuer is stored")

	tickets := &commands.StreamTickets{Pool: pg.Pool}
	ticket, err := tickets.Issue(ctx, tokenActor(grandchild))
	require.NoError(t, err)

	// A token in the middle takes its own subtree only.
	pg.AdvanceSimClock(t, time.Minute)
	revoked, err := tokens.RevokeToken(ctx, tokenOperator, child.ID)
	require.NoError(t, err)
	require.Equal(t, 1, revoked.DescendantsRevoked)
	require.False(t, tokenValid(t, pg, grandchild), "the grandchild goes with its parent")
	require.True(t, tokenValid(t, pg, root), "its issuer stays")
	require.True(t, tokenValid(t, pg, sibling))
	_, err = tickets.Redeem(ctx, ticket.Ticket)
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err), "the grandchild's stream ticket opens nothing")
	require.Equal(t, []string{"created", "revoked"}, tokenChanges(t, pg, grandchild.ID), "the feed has the grandchild's revocation")
	info, err := tokens.GetToken(ctx, tokenOperator, grandchild.ID)
	require.NoError(t, err)
	require.True(t, info.RevokedAt.Equal(pg.Now(t)), "revoked at business time, with its parent")

	pg.AdvanceSimClock(t, time.Minute)
	revoked, err = tokens.RevokeToken(ctx, tokenOperator, root.ID)
	require.NoError(t, err)
	require.Equal(t, 1, revoked.DescendantsRevoked, "the sibling; the child and grandchild were revoked before")
	for _, gone := range []commands.TokenCreated{root, child, grandchild, sibling} {
		require.False(t, tokenValid(t, pg, gone), gone.Identity)
		require.Equal(t, []string{"created", "revoked"}, tokenChanges(t, pg, gone.ID), gone.Identity)
	}
	info, err = tokens.GetToken(ctx, tokenOperator, grandchild.ID)
	require.NoError(t, err)
	require.True(t, info.RevokedAt.Before(pg.Now(t)), "a token revoked before keeps its revocation time")
	require.True(t, tokenValid(t, pg, other), "another tree is untouched")
	require.True(t, tokenValid(t, pg, othersChild), "another tree is untouched")
	require.Equal(t, []string{"created"}, tokenChanges(t, pg, othersChild.ID))

	// Again: the same answer, nothing counted, nothing recorded.
	again, err := tokens.RevokeToken(ctx, tokenOperator, root.ID)
	require.NoError(t, err)
	require.Equal(t, revoked.TokenInfo, again.TokenInfo)
	require.Zero(t, again.DescendantsRevoked)
	require.Equal(t, []string{"created", "revoked"}, tokenChanges(t, pg, sibling.ID))

	// A revoked token issues nothing.
	_, err = tokens.CreateToken(ctx, tokenActor(child), "ops", "late", core.RoleMember)
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err), "%v", err)
}

// A token issued by a token while a token above it is revoked does not
// survive, whichever of the two gets to the tree first: the insert waits
// for a revoke that locked the tree first and then finds its issuer
// revoked, and a revoke that comes second waits for the insert to commit
// and then revokes the new token too.
func TestRevokeRacingAnIssueUnderIt(t *testing.T) {
	t.Parallel()
	// setup is root → parent, both operators; the new token is asked for
	// by parent while root is revoked.
	setup := func(t *testing.T) (*commands.Tokens, *pgtest.DB, commands.TokenCreated, commands.TokenCreated) {
		tokens, pg := tokenSetup(t)
		root := issue(t, tokens, tokenOperator, "root")
		parent := issue(t, tokens, tokenActor(root), "parent")
		return tokens, pg, root, parent
	}
	// paused is a Tokens whose first run of statement stops after it ran,
	// inside its transaction, until the test lets it go on.
	paused := func(t *testing.T, d *pgtest.DB, statement string) (*commands.Tokens, *pgtest.PauseAfter) {
		pause := pgtest.NewPauseAfter(statement)
		pool, err := pg.Connect(context.Background(), d.URL, pg.PoolOptions{MaxConns: 2, IdleInTxTimeout: time.Minute, Tracer: pause})
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		return &commands.Tokens{Pool: pool}, pause
	}

	t.Run("the issue inserted first: the revoke sees the new token", func(t *testing.T) {
		t.Parallel()
		tokens, d, root, parent := setup(t)
		slow, pause := paused(t, d, "ApiTokenCreate")
		var created commands.TokenCreated
		var issueErr error
		issued := make(chan struct{})
		go func() {
			defer close(issued)
			created, issueErr = slow.CreateToken(context.Background(), tokenActor(parent), "ops", "new", core.RoleOperator)
		}()
		<-pause.Reached() // inserted, not committed

		var revoked commands.TokenRevoked
		var revokeErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			revoked, revokeErr = tokens.RevokeToken(context.Background(), tokenOperator, root.ID)
		}()
		d.WaitForLockWait(t) // the revoke waits for the insert's transaction
		pause.Proceed()
		<-issued
		<-done

		require.NoError(t, issueErr)
		require.NoError(t, revokeErr)
		require.Equal(t, 2, revoked.DescendantsRevoked, "parent and the new token")
		require.False(t, tokenValid(t, d, created), "the new token did not survive")
		require.Equal(t, []string{"created", "revoked"}, tokenChanges(t, d, created.ID))
	})

	t.Run("the revoke locked first: the insert sees its issuer revoked", func(t *testing.T) {
		t.Parallel()
		tokens, d, root, parent := setup(t)
		slow, pause := paused(t, d, "ApiTokenRevokeTree")
		var revoked commands.TokenRevoked
		var revokeErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			revoked, revokeErr = slow.RevokeToken(context.Background(), tokenOperator, root.ID)
		}()
		<-pause.Reached() // the tree revoked, not committed

		var issueErr error
		issued := make(chan struct{})
		go func() {
			defer close(issued)
			_, issueErr = tokens.CreateToken(context.Background(), tokenActor(parent), "ops", "new", core.RoleOperator)
		}()
		d.WaitForLockWait(t) // the insert waits for the revoke's transaction
		pause.Proceed()
		<-done
		<-issued

		require.NoError(t, revokeErr)
		require.Equal(t, 1, revoked.DescendantsRevoked)
		require.Equal(t, core.CodeUnauthenticated, core.CodeOf(issueErr), "%v", issueErr)
		var n int
		require.NoError(t, d.Pool.QueryRow(context.Background(),
			"SELECT count(*) FROM api_tokens WHERE identity = 'new'").Scan(&n))
		require.Zero(t, n, "nothing issued")
	})

	// And left to the scheduler: whatever the interleaving, no token is
	// valid while a token above it is revoked.
	t.Run("raced", func(t *testing.T) {
		t.Parallel()
		for round := range 10 {
			tokens, d, root, parent := setup(t)
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make(chan error, 5)
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, err := tokens.CreateToken(context.Background(), tokenActor(parent), "ops", fmt.Sprintf("new-%d", i), core.RoleOperator)
					if err != nil && core.CodeOf(err) != core.CodeUnauthenticated {
						errs <- err
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := tokens.RevokeToken(context.Background(), tokenOperator, root.ID); err != nil {
					errs <- err
				}
			}()
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err, "round %d", round)
			}
			var valid int
			require.NoError(t, d.Pool.QueryRow(context.Background(),
				"SELECT count(*) FROM api_tokens WHERE revoked_at IS NULL").Scan(&valid))
			require.Zero(t, valid, "round %d: every token descends from root", round)
		}
	})
}

// RevokeTokenAlone revokes one token: the tokens it issued stay valid and
// may issue in turn, and stay its descendants, so a RevokeToken of it
// later revokes them, those issued after the first revoke included.
func TestRevokeAloneKeepsTheDescendants(t *testing.T) {
	t.Parallel()
	tokens, pg := tokenSetup(t)
	ctx := context.Background()

	root := issue(t, tokens, tokenOperator, "root")
	child := issue(t, tokens, tokenActor(root), "child")
	grandchild := issue(t, tokens, tokenActor(child), "grandchild")

	alone, err := tokens.RevokeTokenAlone(ctx, tokenOperator, root.ID)
	require.NoError(t, err)
	require.NotNil(t, alone.RevokedAt)
	require.Zero(t, alone.DescendantsRevoked)
	require.False(t, tokenValid(t, pg, root))
	require.True(t, tokenValid(t, pg, child))
	require.True(t, tokenValid(t, pg, grandchild))
	after := issue(t, tokens, tokenActor(child), "after")
	require.Equal(t, child.ID, *after.IssuedBy)

	again, err := tokens.RevokeTokenAlone(ctx, tokenOperator, root.ID)
	require.NoError(t, err)
	require.True(t, alone.RevokedAt.Equal(*again.RevokedAt), "a second revoke alone changes nothing")

	all, err := tokens.RevokeToken(ctx, tokenOperator, root.ID)
	require.NoError(t, err)
	require.Equal(t, 3, all.DescendantsRevoked)
	for _, tok := range []commands.TokenCreated{child, grandchild, after} {
		require.False(t, tokenValid(t, pg, tok), tok.Identity)
	}
}
