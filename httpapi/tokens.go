package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// tokenRoutes are the identity endpoints: operators issue and revoke
// tokens, and any token may revoke itself (the command checks which);
// anyone may read tokens of their own tenant and ask who they are.
func tokenRoutes(r Router) {
	h := tokenHandlers{tokens: r.Deps.Commands.Tokens()}
	h.revocations, _ = r.Deps.Auth.(RevocationNoter)
	r.V1.POST("/tokens", h.create, RequireRole(core.RoleOperator), queryParams())
	r.V1.GET("/tokens/:id", h.get, queryParams())
	r.V1.DELETE("/tokens/:id", h.revoke, queryParams("descendants"))
	r.V1.GET("/whoami", whoami, queryParams())
}

type tokenHandlers struct {
	tokens *commands.Tokens
	// revocations, when the authenticator has it, applies a revoke to
	// this process's cache before the revoke is answered.
	revocations RevocationNoter
}

// createTokenRequest is the body of POST /v1/tokens.
type createTokenRequest struct {
	Tenant   string    `json:"tenant"`
	Identity string    `json:"identity"`
	Role     core.Role `json:"role"`
	// ExpiresAt (RFC 3339), when given, ends the token's validity then.
	ExpiresAt string `json:"expiresAt"`
}

// tokenResponse is a token's metadata as the API shows it. Token, the
// secret, is set only in the response that created it.
type tokenResponse struct {
	ID        string     `json:"id"`
	Tenant    string     `json:"tenant"`
	Identity  string     `json:"identity"`
	Role      core.Role  `json:"role"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// IssuedBy is the token that issued this one, shown to operators only:
	// it is an operator's token, which other tenants never learn of.
	IssuedBy *string `json:"issuedBy,omitempty"`
	Token    string  `json:"token,omitempty"`
}

// tokenRevokedResponse is the answer to DELETE /v1/tokens/{id}: the token,
// and how many tokens descending from it were revoked with it.
type tokenRevokedResponse struct {
	tokenResponse
	DescendantsRevoked int `json:"descendantsRevoked"`
}

// tokenResponseOf is t as actor may see it.
func tokenResponseOf(actor core.Actor, t commands.TokenInfo) tokenResponse {
	r := tokenResponse{
		ID: t.ID, Tenant: t.Tenant, Identity: t.Identity, Role: t.Role,
		CreatedAt: t.CreatedAt, RevokedAt: t.RevokedAt, ExpiresAt: t.ExpiresAt,
	}
	if actor.IsOperator() {
		r.IssuedBy = t.IssuedBy
	}
	return r
}

func (h tokenHandlers) create(c echo.Context) error {
	if err := noIdempotencyKey(c); err != nil {
		return err
	}
	var req createTokenRequest
	if err := bindUnversioned(c, &req); err != nil {
		return err
	}
	token := commands.NewToken{Tenant: req.Tenant, Identity: req.Identity, Role: req.Role}
	if req.ExpiresAt != "" {
		at, err := parseTime("expiresAt", req.ExpiresAt)
		if err != nil {
			return err
		}
		token.ExpiresAt = &at
	}
	created, err := h.tokens.Issue(c.Request().Context(), ActorOf(c), token)
	if err != nil {
		return err
	}
	resp := tokenResponseOf(ActorOf(c), created.TokenInfo)
	resp.Token = created.Secret
	// The secret must not linger in caches or proxies.
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusCreated, resp)
}

func (h tokenHandlers) get(c echo.Context) error {
	info, err := h.tokens.GetToken(c.Request().Context(), ActorOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tokenResponseOf(ActorOf(c), info))
}

func (h tokenHandlers) revoke(c echo.Context) error {
	// ?descendants=keep revokes the token alone (commands.RevokeTokenAlone);
	// the default, revoke, takes the tokens descending from it too.
	descendants, err := queryEnum(c, "descendants", []string{"revoke", "keep"})
	if err != nil {
		return err
	}
	if err := unversionedNoBody(c); err != nil {
		return err
	}
	ctx, actor, id := c.Request().Context(), ActorOf(c), c.Param("id")
	revoke := h.tokens.RevokeToken
	if descendants == "keep" {
		revoke = h.tokens.RevokeTokenAlone
	}
	revoked, err := revoke(ctx, actor, id)
	if err != nil {
		return err
	}
	if h.revocations != nil {
		// The revoke has committed: from this answer on, this process
		// refuses the tokens it revoked; other processes once the
		// revocation feed brings them.
		h.revocations.Revoked(revoked.RevokedIDs)
	}
	return c.JSON(http.StatusOK, tokenRevokedResponse{tokenResponse: tokenResponseOf(actor, revoked.TokenInfo),
		DescendantsRevoked: revoked.DescendantsRevoked})
}

// whoamiResponse is the authenticated caller, as GET /v1/whoami shows it.
type whoamiResponse struct {
	TokenID  string    `json:"tokenId"`
	Tenant   string    `json:"tenant"`
	Identity string    `json:"identity"`
	Role     core.Role `json:"role"`
}

// whoami tells a client which tenant, identity and role its token carries:
// the first thing to check when a call is refused.
func whoami(c echo.Context) error {
	a := ActorOf(c)
	return c.JSON(http.StatusOK, whoamiResponse{TokenID: a.TokenID, Tenant: a.Tenant, Identity: a.Identity, Role: a.Role})
}
