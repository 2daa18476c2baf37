package commands

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// Tokens issues, reads and revokes API tokens. A token binds a bearer secret
// to (tenant, identity, role). Only the SHA-256 of the secret is stored, so a
// leaked database does not leak credentials; the secret is shown once, when
// the token is created. Every change appends to authz_changes in the same
// transaction, which is how authentication caches learn of it.
//
// Each token records the token that issued it (issued_by), so that revoking
// a token revokes the tokens it issued and theirs, in the same transaction
// (RevokeToken): a leaked token cannot outlast its revocation by minting a
// second one first.
type Tokens struct {
	Pool *pgxpool.Pool
	// MaxTTL, when positive, is the longest lifetime a token issued by
	// another token (through the API) may have: one asked for without an
	// expiry, or with a later one, is refused with
	// core.CodeTokenLifetimeExceeded, never shortened. Tokens the system
	// issues with no issuing token (the bootstrap token, `compute tokens
	// create --database`, the demo's) are outside it. 0: no maximum.
	MaxTTL time.Duration
}

// TokenInfo is what may be shown about a token after it was created: never
// its secret.
type TokenInfo struct {
	ID        string
	Tenant    string
	Identity  string
	Role      core.Role
	CreatedAt time.Time
	RevokedAt *time.Time // nil unless revoked
	ExpiresAt *time.Time // nil: never expires
	// IssuedBy is the id of the token that issued this one; nil when the
	// system issued it (bootstrap, --database, demo) or when it was issued
	// before issuers were recorded (migration 0042).
	IssuedBy *string
}

// TokenCreated is a freshly issued token. Secret is the bearer credential;
// it exists only in this value and cannot be recovered later.
type TokenCreated struct {
	TokenInfo
	Secret string
}

// Limits and formats of token fields. The tenant pattern is the one the
// tenants table checks; validating here gives the caller a message naming the
// field instead of a constraint violation.
const (
	tokenSecretPrefix    = core.APITokenPrefix
	tokenSecretBytes     = 32
	tokenIDPrefix        = "tok_"
	tokenIDBytes         = 12
	tokenIdentityMaxLen  = 256
	tokenChangeCreated   = "created"
	tokenChangeRevoked   = "revoked"
	tokenNotFoundMessage = "token %s not found"
)

var tokenTenantPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// NewToken is what an operator asks for when issuing a token.
type NewToken struct {
	Tenant   string
	Identity string
	Role     core.Role
	// ExpiresAt, when set, ends the token's validity then (business time):
	// it must be later than the moment of issue. nil: never expires.
	ExpiresAt *time.Time
}

// CreateToken issues a token for (tenant, identity, role) that does not
// expire: Issue without an expiry.
func (t *Tokens) CreateToken(ctx context.Context, actor core.Actor, tenant, identity string, role core.Role) (TokenCreated, error) {
	return t.Issue(ctx, actor, NewToken{Tenant: tenant, Identity: identity, Role: role})
}

// Issue issues a token, creating its tenant if it does not exist yet. Only
// operators may issue tokens. The actor's token, when it has one, is
// recorded as the new token's issuer, and must still be valid, its own
// issuers too (UNAUTHENTICATED otherwise: it was revoked meanwhile). An
// expiry not after the moment of issue is INVALID_ARGUMENT (the table's
// CHECK is the authority: its clock is the business clock, compute_now()),
// and so is one later than the expiry of the actor's own token, or none
// when that token has one: a token never outlives the token that issued it
// (the insert checks it). A token issued by a token, with MaxTTL set, must
// expire within MaxTTL of now (TOKEN_LIFETIME_EXCEEDED otherwise).
func (t *Tokens) Issue(ctx context.Context, actor core.Actor, req NewToken) (TokenCreated, error) {
	if !actor.IsOperator() {
		return TokenCreated{}, core.Errorf(core.CodePermissionDenied, "only operators may create tokens")
	}
	tenant, identity, role := req.Tenant, req.Identity, req.Role
	if err := tokenValidate(tenant, identity, role); err != nil {
		return TokenCreated{}, err
	}
	secret := tokenSecretPrefix + base64.RawURLEncoding.EncodeToString(tokenRandom(tokenSecretBytes))
	id := tokenIDPrefix + hex.EncodeToString(tokenRandom(tokenIDBytes))

	var row db.ApiTokenCreateRow
	err := pg.InTx(ctx, t.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		var issuer *string
		if actor.TokenID != "" {
			issuer = &actor.TokenID
			if err := t.checkMaxTTL(ctx, q, req.ExpiresAt); err != nil {
				return err
			}
		}
		if err := q.TenantEnsure(ctx, tenant); err != nil {
			return pg.Translate(err, "tenant "+tenant)
		}
		var err error
		row, err = q.ApiTokenCreate(ctx, db.ApiTokenCreateParams{
			ID: id, TokenHash: authn.HashToken(secret), TenantID: tenant, Identity: identity, Role: string(role),
			ExpiresAt: req.ExpiresAt, IssuerID: issuer,
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return tokenIssueRefused(ctx, q, actor.TokenID, req.ExpiresAt)
		}
		if pg.IsCheckViolation(err, "api_tokens_expires_after_creation") {
			return core.Errorf(core.CodeInvalidArgument, "expiresAt %s is not in the future",
				req.ExpiresAt.UTC().Format(time.RFC3339Nano))
		}
		if err != nil {
			return pg.Translate(err, "token")
		}
		if err := q.AuthzChangeAppend(ctx, db.AuthzChangeAppendParams{TokenID: id, Change: tokenChangeCreated}); err != nil {
			return pg.Translate(err, "authz change")
		}
		return nil
	})
	if err != nil {
		return TokenCreated{}, fmt.Errorf("create token for %s/%s: %w", tenant, identity, err)
	}
	return TokenCreated{TokenInfo: tokenInfoOf(db.ApiTokenGetRow(row)), Secret: secret}, nil
}

// GetToken returns a token's metadata. Operators see every token; anyone
// else sees only tokens of their own tenant, and another tenant's token is
// NOT_FOUND, so its existence is never revealed.
func (t *Tokens) GetToken(ctx context.Context, actor core.Actor, id string) (TokenInfo, error) {
	row, err := db.New(t.Pool).ApiTokenGet(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !actor.Sees(row.TenantID)) {
		return TokenInfo{}, core.Errorf(core.CodeNotFound, tokenNotFoundMessage, id)
	}
	if err != nil {
		return TokenInfo{}, fmt.Errorf("get token %s: %w", id, pg.Translate(err, "token"))
	}
	return tokenInfoOf(row), nil
}

// tokenInfoOf converts a stored row. The create and revoke queries return
// the same columns, so their rows convert to ApiTokenGetRow.
func tokenInfoOf(r db.ApiTokenGetRow) TokenInfo {
	return TokenInfo{
		ID: r.ID, Tenant: r.TenantID, Identity: r.Identity, Role: core.Role(r.Role),
		CreatedAt: r.CreatedAt, RevokedAt: r.RevokedAt, ExpiresAt: r.ExpiresAt, IssuedBy: r.IssuedBy,
	}
}

// tokenValidate checks the caller's input before any SQL runs, so every
// mistake comes back as INVALID_ARGUMENT naming the field.
func tokenValidate(tenant, identity string, role core.Role) error {
	if !tokenTenantPattern.MatchString(tenant) {
		return core.Errorf(core.CodeInvalidArgument,
			"tenant %q is invalid: use 1 to 63 lower-case letters, digits or '-', starting with a letter or digit", tenant)
	}
	if strings.TrimSpace(identity) == "" {
		return core.Errorf(core.CodeInvalidArgument, "identity is required")
	}
	if len(identity) > tokenIdentityMaxLen || !core.Printable(identity) {
		return core.Errorf(core.CodeInvalidArgument,
			"identity is invalid: at most %d bytes of printable UTF-8", tokenIdentityMaxLen)
	}
	if !role.Valid() {
		return core.Errorf(core.CodeInvalidArgument, "role %q is invalid: use %s, %s or %s",
			role, core.RoleOperator, core.RoleMember, core.RoleViewer)
	}
	return nil
}

// tokenRandom returns n bytes from the operating system's CSPRNG. Since Go
// 1.24 crypto/rand.Read never fails (it crashes the program instead), so
// there is no error to handle.
func tokenRandom(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
