package commands

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// StreamTicketTTL is how long a stream ticket stays redeemable, in
// business time (compute_now()). A browser asks for a ticket and opens its
// EventSource at once, so seconds are plenty; the table refuses more than
// 60 s.
const StreamTicketTTL = 30 * time.Second

// Format of a stream ticket: a prefix that says what it is (so one pasted
// where a token is expected is recognisable) and 32 random bytes.
const (
	streamTicketPrefix = core.StreamTicketPrefix
	streamTicketBytes  = 32
	// streamTicketSweep bounds the expired tickets one issuance deletes.
	streamTicketSweep = 100
)

// errStreamTicket is every refused redemption: unknown, used, expired, of a
// revoked token or malformed look the same to the caller.
var errStreamTicket = core.Errorf(core.CodeUnauthenticated, "invalid, used or expired stream ticket: ask for a new one")

// StreamTickets issues and redeems stream tickets: short-lived, single-use
// credentials that let a browser's EventSource, which cannot send an
// Authorization header, open GET /v1/events/stream with ?ticket=. A ticket
// is bound to the API token that asked for it and to that token's tenant,
// identity and role, so the stream it opens sees exactly what the token's
// own stream would. Only its SHA-256 is stored, in the database, so that
// any API process can redeem a ticket another one issued. Issuing and
// redeeming are writes (redeeming deletes the row, which is what makes a
// ticket single use), hence here in commands.
type StreamTickets struct {
	Pool *pgxpool.Pool
}

// StreamTicket is a freshly issued ticket. Ticket is the secret; it exists
// only in this value.
type StreamTicket struct {
	Ticket    string
	ExpiresAt time.Time
}

// Issue gives actor a ticket for its own event stream, valid for
// StreamTicketTTL. Any role may have one, as any role may stream; the actor
// must hold an API token (the ticket is bound to it). The same transaction
// deletes some expired tickets, which keeps the table small without a
// reconciler of its own.
func (s *StreamTickets) Issue(ctx context.Context, actor core.Actor) (StreamTicket, error) {
	if actor.TokenID == "" {
		return StreamTicket{}, core.Errorf(core.CodePermissionDenied, "stream tickets are issued to API tokens only")
	}
	secret := streamTicketPrefix + base64.RawURLEncoding.EncodeToString(tokenRandom(streamTicketBytes))
	var out StreamTicket
	err := pg.InTx(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		if _, err := q.StreamTicketDeleteExpired(ctx, streamTicketSweep); err != nil {
			return pg.Translate(err, "expired stream tickets")
		}
		expires, err := q.StreamTicketCreate(ctx, db.StreamTicketCreateParams{
			TicketHash: authn.HashToken(secret), TokenID: actor.TokenID, TenantID: actor.Tenant,
			Identity: actor.Identity, Role: string(actor.Role), TtlSeconds: StreamTicketTTL.Seconds(),
		})
		if err != nil {
			return pg.Translate(err, "stream ticket")
		}
		out = StreamTicket{Ticket: secret, ExpiresAt: expires.UTC()}
		return nil
	})
	if err != nil {
		return StreamTicket{}, fmt.Errorf("issue stream ticket for token %s: %w", actor.TokenID, err)
	}
	return out, nil
}

// Redemption is what a redeemed ticket stands for.
type Redemption struct {
	Actor core.Actor
	// TokenExpiresIn is how long the ticket's token has left when it was
	// redeemed, in business time; nil for a token without an expiry. A
	// process that never looked the token up learns its expiry here, so
	// that the stream the ticket opens ends with the token.
	TokenExpiresIn *time.Duration
}

// Redeem uses up ticket and returns the actor it was issued to. A ticket
// that is unknown, already used, expired (in business time) or whose token
// was revoked or expired since is UNAUTHENTICATED, all with the same
// message. A good ticket of a suspended tenant is TENANT_SUSPENDED, naming
// the reason, as the tenant's tokens are refused.
func (s *StreamTickets) Redeem(ctx context.Context, ticket string) (Redemption, error) {
	if !wellFormedStreamTicket(ticket) {
		return Redemption{}, errStreamTicket
	}
	row, err := db.New(s.Pool).StreamTicketRedeem(ctx, authn.HashToken(ticket))
	if errors.Is(err, pgx.ErrNoRows) {
		return Redemption{}, errStreamTicket
	}
	if err != nil {
		return Redemption{}, fmt.Errorf("redeem stream ticket: %w", pg.Translate(err, "stream ticket"))
	}
	if row.SuspendedReason != nil {
		// The ticket was good; its tenant is suspended: the refusal every
		// request of the tenant gets, naming the reason. The ticket is used
		// up all the same (single use, whatever the answer).
		return Redemption{}, core.TenantSuspendedError(row.TenantID, *row.SuspendedReason)
	}
	out := Redemption{Actor: core.Actor{TokenID: row.TokenID, Tenant: row.TenantID, Identity: row.Identity, Role: core.Role(row.Role)}}
	if row.TokenExpiresAt != nil {
		left := row.TokenExpiresAt.Sub(row.DbNow)
		out.TokenExpiresIn = &left
	}
	return out, nil
}

// wellFormedStreamTicket reports whether ticket has the shape Issue gives
// it, so that junk never reaches the database.
func wellFormedStreamTicket(ticket string) bool {
	raw, ok := strings.CutPrefix(ticket, streamTicketPrefix)
	if !ok || len(raw) != base64.RawURLEncoding.EncodedLen(streamTicketBytes) {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(raw)
	return err == nil
}
