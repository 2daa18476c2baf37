package commands_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

func streamTicketSetup(t *testing.T) (*commands.StreamTickets, *pgtest.DB, core.Actor) {
	t.Helper()
	tokens, pg := tokenSetup(t)
	created, err := tokens.CreateToken(context.Background(), tokenOperator, "acme", "bob@acme", core.RoleViewer)
	require.NoError(t, err)
	actor := core.Actor{TokenID: created.ID, Tenant: "acme", Identity: "bob@acme", Role: core.RoleViewer}
	return &commands.StreamTickets{Pool: pg.Pool}, pg, actor
}

// A ticket redeems to exactly the actor it was issued to, once: of many
// concurrent redemptions (API processes racing for one ticket), one wins.
func TestStreamTicketRedeemsOnceToItsActor(t *testing.T) {
	t.Parallel()
	tickets, pg, actor := streamTicketSetup(t)
	ctx := context.Background()
	ticket, err := tickets.Issue(ctx, actor)
	require.NoError(t, err)
	require.True(t, ticket.ExpiresAt.Equal(pgtest.SimEpoch.Add(commands.StreamTicketTTL)))
	var stored int
	require.NoError(t, pg.Pool.QueryRow(ctx, "SELECT count(*) FROM stream_tickets WHERE ticket_hash = sha256($1::bytea)",
		[]byte(ticket.Ticket)).Scan(&stored))
	require.Equal(t, 1, stored, "only the hash is stored")

	const racers = 8
	var wg sync.WaitGroup
	results := make(chan error, racers)
	got := make(chan commands.Redemption, racers)
	for range racers {
		wg.Go(func() {
			a, err := tickets.Redeem(ctx, ticket.Ticket)
			results <- err
			if err == nil {
				got <- a
			}
		})
	}
	wg.Wait()
	close(results)
	close(got)
	var won, refused int
	for err := range results {
		switch {
		case err == nil:
			won++
		case core.CodeOf(err) == core.CodeUnauthenticated:
			refused++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	require.Equal(t, 1, won)
	require.Equal(t, racers-1, refused)
	red := <-got
	require.Equal(t, actor, red.Actor)
	require.Nil(t, red.TokenExpiresIn, "the token has no expiry")
}

// A redemption carries how long the ticket's token has left, so that a
// process that never looked the token up can end the stream with it.
func TestStreamTicketCarriesItsTokensExpiry(t *testing.T) {
	t.Parallel()
	tokens, pg := tokenSetup(t)
	ctx := context.Background()
	expiry := pg.Now(t).Add(time.Hour)
	created, err := tokens.Issue(ctx, tokenOperator, commands.NewToken{Tenant: "acme", Identity: "ci@acme",
		Role: core.RoleViewer, ExpiresAt: &expiry})
	require.NoError(t, err)
	tickets := &commands.StreamTickets{Pool: pg.Pool}
	ticket, err := tickets.Issue(ctx, core.Actor{TokenID: created.ID, Tenant: "acme", Identity: "ci@acme", Role: core.RoleViewer})
	require.NoError(t, err)
	pg.AdvanceSimClock(t, 10*time.Second)
	red, err := tickets.Redeem(ctx, ticket.Ticket)
	require.NoError(t, err)
	require.NotNil(t, red.TokenExpiresIn)
	require.Equal(t, time.Hour-10*time.Second, *red.TokenExpiresIn)
}

// Tickets expire in business time; issuing sweeps expired ones away; only
// API tokens get tickets.
func TestStreamTicketExpiryAndSweep(t *testing.T) {
	t.Parallel()
	tickets, pg, actor := streamTicketSetup(t)
	ctx := context.Background()
	old, err := tickets.Issue(ctx, actor)
	require.NoError(t, err)
	pg.AdvanceSimClock(t, commands.StreamTicketTTL)
	_, err = tickets.Redeem(ctx, old.Ticket)
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err), "expired at exactly its expiry")

	_, err = tickets.Issue(ctx, actor)
	require.NoError(t, err)
	var left int
	require.NoError(t, pg.Pool.QueryRow(ctx, "SELECT count(*) FROM stream_tickets").Scan(&left))
	require.Equal(t, 1, left, "the expired ticket was swept by the next issue")

	_, err = tickets.Issue(ctx, core.Actor{Tenant: "acme", Identity: "system", Role: core.RoleOperator})
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err))
	_, err = tickets.Redeem(ctx, "")
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err))
}
