package queries

import (
	"context"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// The fleet's and identity's configuration (sites, pools, tenants, quotas,
// API tokens) has no read model: those tables are small and rarely
// written, and a plain SELECT of them takes no row lock, so it never waits
// on a command and a command never waits on it. These queries read them
// directly and are therefore always up to date: they take no minPosition.

// Site is a site as the read API shows it.
type Site struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
}

// GetSite reads one site. Sites hold no tenant's data: every caller may
// read them, as every caller may reserve in them.
func (s *Service) GetSite(ctx context.Context, _ core.Actor, id string) (Site, error) {
	r, err := s.q().SiteGet(ctx, id)
	if err != nil {
		return Site{}, wrap(err, "site "+id)
	}
	return Site{ID: r.ID, Name: r.Name, Version: r.Version, CreatedAt: r.CreatedAt.UTC()}, nil
}

// ListSites is a page request of the site list.
type ListSites struct {
	Cursor string
	Limit  int
}

// ListSites pages through the sites in id order.
func (s *Service) ListSites(ctx context.Context, _ core.Actor, l ListSites) (items []Site, nextCursor string, err error) {
	limit, after, err := keysetPage("site", l.Cursor, l.Limit)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.q().SiteList(ctx, db.SiteListParams{AfterID: after, MaxRows: int32(limit + 1)})
	if err != nil {
		return nil, "", wrap(err, "sites")
	}
	return pageOf(rows, limit, "site", func(r db.Site) []string { return []string{r.ID} },
		func(r db.Site) Site {
			return Site{ID: r.ID, Name: r.Name, Version: r.Version, CreatedAt: r.CreatedAt.UTC()}
		})
}

// keysetPage reads a list request whose cursor of kind wraps one key: the
// page size and the key to start after ("" for the first page).
func keysetPage(kind, cursor string, n int) (limit int, after string, err error) {
	if limit, err = limitOf(n); err != nil {
		return 0, "", err
	}
	parts, err := DecodeCursor(kind, cursor, 1)
	if err != nil || parts == nil {
		return limit, "", err
	}
	return limit, parts[0], nil
}

// pageOf turns up to limit+1 rows into a page of at most limit items and
// the cursor of the next page ("" when there is none): kind and the parts
// of the last item's key.
func pageOf[R, T any](rows []R, limit int, kind string, key func(R) []string, conv func(R) T) ([]T, string, error) {
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		next = EncodeCursor(kind, key(rows[limit-1])...)
	}
	items := make([]T, len(rows))
	for i, r := range rows {
		items[i] = conv(r)
	}
	return items, next, nil
}
