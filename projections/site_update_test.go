package projections_test

import (
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/queries"
)

// Sites have no read model: GET /v1/sites and /v1/sites/{id} read the
// sites table (queries/sites.go), so a rename shows there as soon as its
// command commits. Every projection passes over site.updated without
// touching its tables; replaying a log that holds it changes nothing, and
// neither does a rebuild from it.
func TestSiteUpdatedPassesThroughTheProjections(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.scenario(t)
	f.catchUp(t)
	before := takeSnapshot(t, f.ctx, f.d.Q)

	res, err := f.h.UpdateSite(f.ctx, operator, commands.UpdateSite{ID: "fra1", Name: "Frankfurt Main"})
	require.NoError(t, err)
	require.EqualValues(t, 2, res.Version)

	// The reads show the new name at once, without waiting for any
	// projection.
	qs := queries.New(f.d.Pool)
	site, err := qs.GetSite(f.ctx, tenantA, "fra1")
	require.NoError(t, err)
	require.Equal(t, "Frankfurt Main", site.Name)
	require.EqualValues(t, 2, site.Version)
	list, _, err := qs.ListSites(f.ctx, tenantA, queries.ListSites{})
	require.NoError(t, err)
	i := slices.IndexFunc(list, func(s queries.Site) bool { return s.ID == "fra1" })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, site, list[i])

	// Every dispatcher applies the batch holding it (catchUp fails on an
	// error) and moves its cursor past it; no read model changed.
	f.catchUp(t)
	for _, p := range projections.All() {
		cur, err := outbox.CursorOf(f.ctx, f.d.Q, p.ID())
		require.NoError(t, err)
		require.False(t, cur.Less(res.Position), "%s stopped before site.updated", p.ID())
	}
	require.Equal(t, before, takeSnapshot(t, f.ctx, f.d.Q))

	events := readLog(t, f)
	require.True(t, slices.ContainsFunc(events, func(e outbox.Stored) bool { return e.Type == core.EventSiteUpdated }))
	for range 2 {
		for _, p := range projections.All() {
			require.NoError(t, pgx.BeginFunc(f.ctx, f.d.Pool, func(tx pgx.Tx) error {
				return p.Apply(f.ctx, tx, events)
			}), p.ID())
		}
	}
	require.Equal(t, before, takeSnapshot(t, f.ctx, f.d.Q), "replaying a log with site.updated changed a read model")

	for _, p := range projections.All() {
		_, err := projections.Rebuild(f.ctx, f.d.Pool, p.ID())
		require.NoError(t, err, p.ID())
	}
	require.Equal(t, before, takeSnapshot(t, f.ctx, f.d.Q), "a rebuild from a log with site.updated differs")
}
