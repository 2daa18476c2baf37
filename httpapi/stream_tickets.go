package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// Stream tickets let a browser subscribe to the event stream: EventSource
// cannot send an Authorization header, so a page asks for a ticket with its
// token (POST /v1/events/stream-tickets) and opens
// GET /v1/events/stream?ticket=<ticket>. A ticket is single use, valid for
// commands.StreamTicketTTL, and bound to the token that asked for it: the
// stream has that token's tenant, identity, role and revocation watch. See
// commands.StreamTickets.

// streamTicketPath is the one route that accepts a ticket instead of a
// bearer token.
const streamTicketPath = "/v1/events/stream"

// streamTicketRoutes registers POST /v1/events/stream-tickets.
func streamTicketRoutes(r Router) {
	h := streamTicketHandlers{tickets: r.Deps.Commands.StreamTickets()}
	r.V1.POST("/events/stream-tickets", h.issue, queryParams())
}

type streamTicketHandlers struct {
	tickets *commands.StreamTickets
}

// streamTicketResponse is the answer to POST /v1/events/stream-tickets.
type streamTicketResponse struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func (h streamTicketHandlers) issue(c echo.Context) error {
	if err := noIdempotencyKey(c); err != nil {
		return err
	}
	if err := unversionedNoBody(c); err != nil {
		return err
	}
	t, err := h.tickets.Issue(c.Request().Context(), ActorOf(c))
	if err != nil {
		return err
	}
	// A credential: not for caches or proxies.
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusCreated, streamTicketResponse{Ticket: t.Ticket, ExpiresAt: t.ExpiresAt})
}

// ticketActor authenticates a request by its ?ticket= when it is a request
// for the event stream without an Authorization header; ok is false for
// any other request, which then needs its bearer token. A refused ticket
// counts as a failed authentication of the client's address, like a
// refused token, so tickets cannot be guessed faster than tokens.
func (g *authGate) ticketActor(c echo.Context) (actor core.Actor, ok bool, err error) {
	req := c.Request()
	if g.tickets == nil || c.Path() != streamTicketPath || req.Header.Get(echo.HeaderAuthorization) != "" {
		return core.Actor{}, false, nil
	}
	ticket := c.QueryParam("ticket")
	if ticket == "" {
		return core.Actor{}, false, nil
	}
	now := time.Now()
	client := g.clients.Key(req)
	if g.fails != nil {
		if wait, throttled := g.fails.Throttled(client, now); throttled {
			return core.Actor{}, true, rateLimited(c, wait, "too many failed authentications from this address: retry later")
		}
	}
	red, err := g.tickets.Redeem(req.Context(), ticket)
	if err != nil {
		if core.CodeOf(err) == core.CodeUnauthenticated {
			if g.fails != nil {
				g.fails.Failed(client, now)
			}
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="compute", error="invalid_token"`)
		}
		return core.Actor{}, true, err
	}
	if n, ok := g.auth.(ExpiryNoter); ok && red.TokenExpiresIn != nil {
		n.NoteExpiry(red.Actor.TokenID, *red.TokenExpiresIn)
	}
	return red.Actor, true, nil
}
