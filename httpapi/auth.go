package httpapi

import (
	"context"
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/core"
)

// Authenticator resolves a bearer token to the actor it was issued to. An
// unknown or revoked token is a *core.Error with CodeUnauthenticated; any
// other error (the database is down, say) passes through with its own code,
// so an outage is a 503 and not a wave of spurious 401s.
type Authenticator interface {
	Authenticate(ctx context.Context, bearerToken string) (core.Actor, error)
}

// ctxKeyActor is where Authenticate stores the caller on the echo context.
const ctxKeyActor = "httpapi.actor"

// Authenticate is the middleware that makes a route require a bearer token:
// `Authorization: Bearer <token>`. A missing or malformed header and an
// unknown token are all 401 UNAUTHENTICATED (with WWW-Authenticate, set by
// the error handler). On success the actor is stored for ActorOf.
func Authenticate(auth Authenticator) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			token, err := bearerToken(c.Request().Header.Get(echo.HeaderAuthorization))
			if err != nil {
				return err
			}
			actor, err := auth.Authenticate(c.Request().Context(), token)
			if err != nil {
				if core.CodeOf(err) == core.CodeUnauthenticated {
					c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="compute", error="invalid_token"`)
				}
				return err
			}
			c.Set(ctxKeyActor, actor)
			return next(c)
		}
	}
}

// bearerToken extracts the token from an Authorization header value. The
// scheme is case-insensitive (RFC 7235); the token must be one word.
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
