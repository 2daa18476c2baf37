package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/authn"
)

// Authenticator resolves a bearer token to the actor it was issued to. An
// unknown or revoked token is a *core.Error with CodeUnauthenticated; any
// other error (the database is down, say) passes through with its own code,
// so an outage is a 503 and not a wave of spurious 401s.
type Authenticator interface {
	Authenticate(ctx context.Context, bearerToken string) (core.Actor, error)
}

// CachedAuthenticator is implemented by authenticators that can answer
// from memory, without a database lookup (authn.Authenticator). While a
// client address is throttled for failed attempts, only such answers get
// through, so a shared address (a proxy, a NAT) does not lock out callers
// whose token is known good.
type CachedAuthenticator interface {
	AuthenticateCached(bearerToken string) (core.Actor, bool)
}

// ExpiryNoter is implemented by authenticators that remember token
// expiries for RevocationWatcher (authn.Authenticator). A stream opened
// with a stream ticket tells it the expiry of the ticket's token, which the
// process may never have looked up itself.
type ExpiryNoter interface {
	NoteExpiry(tokenID string, left time.Duration)
}

// RevocationWatcher is implemented by authenticators that learn of token
// revocations (authn.Authenticator, through authz_changes) and expiries.
// Long-lived responses (event streams) watch their token and end when it is
// revoked or expires.
type RevocationWatcher interface {
	// WatchRevocation calls revoked once when tokenID is revoked or
	// expires, or at once if it just was revoked; stop ends the watch.
	// revoked must not block.
	WatchRevocation(tokenID string, revoked func()) (stop func())
}

// RevocationNoter is implemented by authenticators that can be told of
// revocations this process committed (authn.Authenticator.Revoked): a
// revoke answered by this process then holds in this process at once, not
// once the revocation feed brings it.
type RevocationNoter interface {
	Revoked(tokenIDs []string)
}

// ctxKeyActor is where Authenticate stores the caller on the echo context.
const ctxKeyActor = "httpapi.actor"

// Authenticate is the middleware that makes a route require a bearer token:
// `Authorization: Bearer <token>`. A missing or malformed header and an
// unknown token are all 401 UNAUTHENTICATED (with WWW-Authenticate, set by
// the error handler). On success the actor is stored for ActorOf. It does
// not limit failures; New's /v1 group does (see authGate).
func Authenticate(auth Authenticator) echo.MiddlewareFunc {
	return (&authGate{auth: auth}).middleware()
}

// authGate authenticates bearer tokens and, when fails is set, throttles
// client addresses that fail too often: 429 RATE_LIMITED with Retry-After
// instead of another database lookup.
type authGate struct {
	auth    Authenticator
	fails   *authn.FailureLimiter   // nil: no limit
	clients authn.ClientAddresses   // whose address a failure counts against
	tickets *commands.StreamTickets // nil: no stream tickets (see ticketActor)
}

func newAuthGate(d Deps) *authGate {
	return &authGate{auth: d.Auth, fails: authn.NewFailureLimiter(d.AuthFailureRate, d.AuthFailureBurst),
		clients: d.ClientAddresses, tickets: d.Commands.StreamTickets()}
}

func (g *authGate) middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			token, err := requestBearer(c.Request())
			if err != nil {
				// The event stream also takes a stream ticket instead.
				actor, ok, terr := g.ticketActor(c)
				if !ok {
					return err
				}
				if terr != nil {
					return terr
				}
				c.Set(ctxKeyActor, actor)
				return next(c)
			}
			actor, err := g.actor(c, token)
			if err != nil {
				return err
			}
			c.Set(ctxKeyActor, actor)
			return next(c)
		}
	}
}

// actor authenticates token for request c, counting a failure against the
// client's address.
func (g *authGate) actor(c echo.Context, token string) (core.Actor, error) {
	now := time.Now()
	client := g.clients.Key(c.Request())
	if g.fails != nil {
		if wait, throttled := g.fails.Throttled(client, now); throttled {
			if ca, ok := g.auth.(CachedAuthenticator); ok {
				if actor, ok := ca.AuthenticateCached(token); ok {
					return actor, nil
				}
			}
			return core.Actor{}, rateLimited(c, wait, "too many failed authentications from this address: retry later")
		}
	}
	actor, err := g.auth.Authenticate(c.Request().Context(), token)
	if err != nil {
		if core.CodeOf(err) == core.CodeUnauthenticated {
			if g.fails != nil {
				g.fails.Failed(client, now)
			}
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="compute", error="invalid_token"`)
		}
		return core.Actor{}, err
	}
	return actor, nil
}

// optionalActor authenticates the request's bearer token if it has one:
// ok is false without a token or when it does not authenticate (counted
// as a failure all the same). For routes that answer anyone but tell more
// to some callers.
func (g *authGate) optionalActor(c echo.Context) (core.Actor, bool) {
	if c.Request().Header.Get(echo.HeaderAuthorization) == "" {
		return core.Actor{}, false
	}
	token, err := requestBearer(c.Request())
	if err != nil {
		return core.Actor{}, false
	}
	actor, err := g.actor(c, token)
	c.Response().Header().Del(echo.HeaderWWWAuthenticate)
	c.Response().Header().Del("Retry-After")
	return actor, err == nil
}

// bearerToken extracts the token from an Authorization header value. The
// scheme is case-insensitive (RFC 7235); the token must be one word.
// requestBearer is the bearer token of r's one Authorization header. Two
// or more are refused, not resolved: which one a proxy or a library hands
// on differs, so honouring either would authenticate a request as someone
// another hop may have seen as someone else.
func requestBearer(r *http.Request) (string, error) {
	if len(r.Header.Values(echo.HeaderAuthorization)) > 1 {
		return "", core.Errorf(core.CodeUnauthenticated, "more than one Authorization header: send exactly one")
	}
	return bearerToken(r.Header.Get(echo.HeaderAuthorization))
}

func bearerToken(header string) (string, error) {
	if header == "" {
		return "", core.Errorf(core.CodeUnauthenticated, "missing bearer token: send Authorization: Bearer <token>")
	}
	scheme, token, ok := strings.Cut(header, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return "", core.Errorf(core.CodeUnauthenticated, "malformed Authorization header: send Authorization: Bearer <token>")
	}
	return token, nil
}

// ActorOf returns the caller that Authenticate stored. Calling it on a route
// without Authenticate is a wiring bug; it panics (the recover middleware
// turns that into a 500) rather than returning a zero actor that some check
// might mistake for a real one.
func ActorOf(c echo.Context) core.Actor {
	actor, ok := c.Get(ctxKeyActor).(core.Actor)
	if !ok {
		panic(fmt.Sprintf("httpapi.ActorOf on %s %s: route is not behind Authenticate", c.Request().Method, c.Path()))
	}
	return actor
}

// RequireRole is route middleware that lets through only actors holding one
// of roles; anyone else gets 403 PERMISSION_DENIED. It must run after
// Authenticate. Commands check permissions again; this is the early, cheap
// refusal at the edge.
func RequireRole(roles ...core.Role) echo.MiddlewareFunc {
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	msg := "this operation requires role " + strings.Join(names, " or ")
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			actor := ActorOf(c)
			for _, r := range roles {
				if actor.Role == r {
					return next(c)
				}
			}
			return core.Errorf(core.CodePermissionDenied, "%s", msg)
		}
	}
}

// Defaults of the per-client limit on failed authentications (Deps
// AuthFailureRate and AuthFailureBurst): authn's, shared with the gateway.
const (
	DefaultAuthFailureBurst = authn.DefaultFailureBurst
	DefaultAuthFailureRate  = authn.DefaultFailureRate
)
