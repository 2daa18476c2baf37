package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// UpdateSite renames a site: Name is its new display name (its id never
// changes). IfVersion, when non-zero, applies the change only to that
// version of the site (CONFLICT otherwise). IdempotencyKey is optional.
type UpdateSite struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	IfVersion      int64  `json:"ifVersion,omitempty"` // 0: no version check
	IdempotencyKey string `json:"-"`
}

// UpdateSite runs sites.update (operator only): it locks the site, checks
// If-Match, writes the new name with a version guard and appends
// site.updated, in one transaction. A name the site already has is a no-op:
// nothing is written, no event appended, and the result carries the site
// as it is with a zero position.
func (h *Handlers) UpdateSite(ctx context.Context, actor core.Actor, cmd UpdateSite) (SiteResult, error) {
	if err := requireOperator(actor, "sites.update"); err != nil {
		return SiteResult{}, err
	}
	// The same rules as CreateSite: a site needs a name, one every role
	// may be shown.
	if err := validSite(cmd.ID, cmd.Name); err != nil {
		return SiteResult{}, keyReusedFirst(ctx, h, actor, cmd.IdempotencyKey, "sites.update", cmd, err)
	}
	res, err := idempotent(ctx, h, actor, cmd.IdempotencyKey, "sites.update", cmd,
		func(ctx context.Context, tx pgx.Tx) (SiteResult, error) {
			return updateSite(ctx, db.New(tx), cmd)
		})
	if err != nil {
		return SiteResult{}, fmt.Errorf("update site %s: %w", cmd.ID, err)
	}
	return res, nil
}

func updateSite(ctx context.Context, q *db.Queries, cmd UpdateSite) (SiteResult, error) {
	what := "site " + cmd.ID
	// FOR NO KEY UPDATE: a pool created in the site meanwhile holds FOR
	// KEY SHARE on it (its foreign key), which a rename must not wait for.
	cur, err := q.SiteGetForUpdate(ctx, cmd.ID)
	if err != nil {
		return SiteResult{}, pg.Translate(err, what) // no row: NOT_FOUND
	}
	if err := checkVersion(cmd.IfVersion, cur.Version, what); err != nil {
		return SiteResult{}, err
	}
	if cur.Name == cmd.Name {
		return SiteResult{ID: cur.ID, Name: cur.Name, Version: cur.Version}, nil
	}
	s, err := q.SiteRename(ctx, db.SiteRenameParams{ID: cur.ID, Name: cmd.Name, Version: cur.Version})
	if errors.Is(err, pgx.ErrNoRows) {
		return SiteResult{}, zeroRowsConflict(0, nil, what)
	}
	if err != nil {
		return SiteResult{}, pg.Translate(err, what)
	}
	pos, err := emit(ctx, q, core.EventSiteUpdated, "", core.SiteSubject(s.ID),
		core.SiteEventData{ID: s.ID, Name: s.Name, Version: s.Version})
	return SiteResult{ID: s.ID, Name: s.Name, Version: s.Version, Position: pos}, err
}
