package queries

import (
	"context"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// Token is an API token's metadata as the read API lists it: never its
// secret, which exists only in the response that created it (the table
// holds its SHA-256). A token is valid until revoked, or until its
// expiresAt when it was issued with one.
type Token struct {
	ID        string     `json:"id"`
	Tenant    string     `json:"tenant"`
	Identity  string     `json:"identity"`
	Role      core.Role  `json:"role"`
	CreatedAt time.Time  `json:"createdAt"`
	RevokedAt *time.Time `json:"revokedAt,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// IssuedBy is the token that issued this one, for operators only (an
	// operator's token, which other tenants never learn of); absent for
	// tokens the system issued and tokens issued before issuers were
	// recorded.
	IssuedBy *string `json:"issuedBy,omitempty"`
}

// ListTokens filters a list of tokens.
type ListTokens struct {
	// Tenant narrows an operator's list to one tenant; others always see
	// only their own tenant's tokens.
	Tenant string
	Cursor string
	Limit  int
}

// ListTokens pages through the tokens the actor may see, in creation
// order, revoked ones included (with revokedAt).
func (s *Service) ListTokens(ctx context.Context, actor core.Actor, l ListTokens) (items []Token, nextCursor string, err error) {
	limit, err := limitOf(l.Limit)
	if err != nil {
		return nil, "", err
	}
	after, err := DecodeCursor("token", l.Cursor, 2)
	if err != nil {
		return nil, "", err
	}
	p := db.ApiTokenListParams{TenantID: tenantFilter(actor, l.Tenant), MaxRows: int32(limit + 1)}
	if after != nil {
		if p.AfterCreatedAt, err = time.Parse(time.RFC3339Nano, after[0]); err != nil {
			return nil, "", core.Errorf(core.CodeInvalidArgument, "malformed cursor %q", core.Clip(l.Cursor, 64))
		}
		p.AfterID = after[1]
	}
	rows, err := s.q().ApiTokenList(ctx, p)
	if err != nil {
		return nil, "", wrap(err, "tokens")
	}
	return pageOf(rows, limit, "token", func(r db.ApiTokenListRow) []string {
		return []string{r.CreatedAt.UTC().Format(time.RFC3339Nano), r.ID}
	}, func(r db.ApiTokenListRow) Token {
		tok := Token{ID: r.ID, Tenant: r.TenantID, Identity: r.Identity, Role: core.Role(r.Role),
			CreatedAt: r.CreatedAt.UTC(), RevokedAt: utc(r.RevokedAt), ExpiresAt: utc(r.ExpiresAt)}
		if actor.IsOperator() {
			tok.IssuedBy = r.IssuedBy
		}
		return tok
	})
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
