package commands

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// CreateSite adds a site: a place (a data centre, a provider region) that
// holds pools. IdempotencyKey is optional.
type CreateSite struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	IdempotencyKey string `json:"-"`
}

// SiteResult is a site as written, and the position of its event.
type SiteResult struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Version  int64           `json:"version"`
	Position outbox.Position `json:"position"`
}

// validSite refuses a site without an id or a name, or with a name not
// every role may be shown: the rule of sites.create and sites.update.
func validSite(id, name string) error {
	if id == "" || name == "" {
		return core.Errorf(core.CodeInvalidArgument, "a site needs an id and a name")
	}
	return core.ValidSiteName(name)
}

// CreateSite runs sites.create (operator only).
func (h *Handlers) CreateSite(ctx context.Context, actor core.Actor, cmd CreateSite) (SiteResult, error) {
	if err := requireOperator(actor, "sites.create"); err != nil {
		return SiteResult{}, err
	}
	err := validSite(cmd.ID, cmd.Name)
	if err == nil {
		// Only a create checks the id's form: an update of an id no site
		// can have finds no site (NOT_FOUND), as any unknown id does.
		err = core.ValidSiteID(cmd.ID)
	}
	if err != nil {
		return SiteResult{}, keyReusedFirst(ctx, h, actor, cmd.IdempotencyKey, "sites.create", cmd, err)
	}
	res, err := idempotent(ctx, h, actor, cmd.IdempotencyKey, "sites.create", cmd,
		func(ctx context.Context, tx pgx.Tx) (SiteResult, error) {
			q := db.New(tx)
			s, err := q.SiteCreate(ctx, db.SiteCreateParams{ID: cmd.ID, Name: cmd.Name})
			if err != nil {
				return SiteResult{}, pg.Translate(err, "site "+cmd.ID)
			}
			pos, err := emit(ctx, q, core.EventSiteCreated, "", core.SiteSubject(s.ID),
				core.SiteEventData{ID: s.ID, Name: s.Name, Version: s.Version})
			return SiteResult{ID: s.ID, Name: s.Name, Version: s.Version, Position: pos}, err
		})
	if err != nil {
		return SiteResult{}, fmt.Errorf("create site %s: %w", cmd.ID, err)
	}
	return res, nil
}
