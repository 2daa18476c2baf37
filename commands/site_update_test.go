package commands_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// siteEvents are the site.updated events of a site, in log order.
func (f *fixture) siteEvents(t *testing.T, id string) []core.SiteEventData {
	t.Helper()
	rows, err := f.d.Pool.Query(f.ctx, `SELECT tenant_id, data FROM outbox
		WHERE type = $1 AND subject = $2 ORDER BY txid, seq`, core.EventSiteUpdated, core.SiteSubject(id))
	require.NoError(t, err)
	defer rows.Close()
	var out []core.SiteEventData
	for rows.Next() {
		var tenant *string
		var data []byte
		require.NoError(t, rows.Scan(&tenant, &data))
		require.Nil(t, tenant, "site.updated is fleet-wide: no tenant")
		var d core.SiteEventData
		require.NoError(t, json.Unmarshal(data, &d))
		out = append(out, d)
	}
	require.NoError(t, rows.Err())
	return out
}

func (f *fixture) site(t *testing.T, id string) db.Site {
	t.Helper()
	s, err := f.d.Q.SiteGet(f.ctx, id)
	require.NoError(t, err)
	return s
}

// A rename writes the new name and the next version, and appends exactly
// one site.updated carrying them, in the same transaction.
func TestUpdateSiteRenames(t *testing.T) {
	t.Parallel()
	f := setup(t)
	res, err := f.h.UpdateSite(f.ctx, operator, commands.UpdateSite{ID: commandstest.Site, Name: "Frankfurt Main"})
	require.NoError(t, err)
	require.Equal(t, commands.SiteResult{ID: "fra1", Name: "Frankfurt Main", Version: 2, Position: res.Position}, res)
	require.False(t, res.Position.IsZero(), "a rename answers the position of its event")

	s := f.site(t, "fra1")
	require.Equal(t, "Frankfurt Main", s.Name)
	require.EqualValues(t, 2, s.Version)
	require.Equal(t, []core.SiteEventData{{ID: "fra1", Name: "Frankfurt Main", Version: 2}}, f.siteEvents(t, "fra1"))
	require.Equal(t, 1, f.countEvents(t, core.EventSiteCreated))
	f.requireInvariants(t)

	// A second rename: version 3, a second event.
	res, err = f.h.UpdateSite(f.ctx, operator, commands.UpdateSite{ID: "fra1", Name: "FRA-1"})
	require.NoError(t, err)
	require.EqualValues(t, 3, res.Version)
	require.Len(t, f.siteEvents(t, "fra1"), 2)
	f.requireInvariants(t)
}

// The name a site already has changes nothing: no write, no event.
func TestUpdateSiteToItsOwnNameIsANoOp(t *testing.T) {
	t.Parallel()
	f := setup(t)
	res, err := f.h.UpdateSite(f.ctx, operator, commands.UpdateSite{ID: "fra1", Name: "Frankfurt 1", IfVersion: 1})
	require.NoError(t, err)
	require.Equal(t, commands.SiteResult{ID: "fra1", Name: "Frankfurt 1", Version: 1}, res)
	require.True(t, res.Position.IsZero())
	require.EqualValues(t, 1, f.site(t, "fra1").Version)
	require.Zero(t, f.countEvents(t, core.EventSiteUpdated))
	f.requireInvariants(t)
}

// Refusals change nothing and append nothing: who, what, which site and
// which version are all checked before anything is written.
func TestUpdateSiteRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	viewer := core.Actor{Tenant: "acme", Identity: "vic@acme", Role: core.RoleViewer}
	for _, c := range []struct {
		name  string
		actor core.Actor
		cmd   commands.UpdateSite
		code  core.Code
	}{
		{"member", tenantA, commands.UpdateSite{ID: "fra1", Name: "x"}, core.CodePermissionDenied},
		{"viewer", viewer, commands.UpdateSite{ID: "fra1", Name: "x"}, core.CodePermissionDenied},
		{"no name", operator, commands.UpdateSite{ID: "fra1"}, core.CodeInvalidArgument},
		{"no id", operator, commands.UpdateSite{Name: "x"}, core.CodeInvalidArgument},
		{"unknown site", operator, commands.UpdateSite{ID: "nowhere", Name: "x"}, core.CodeNotFound},
		{"stale If-Match", operator, commands.UpdateSite{ID: "fra1", Name: "x", IfVersion: 7}, core.CodeConflict},
		{"stale If-Match, same name", operator, commands.UpdateSite{ID: "fra1", Name: "Frankfurt 1", IfVersion: 7}, core.CodeConflict},
		{"terminal escape in the name", operator, commands.UpdateSite{ID: "fra1", Name: "\x1b]0;pwned\x07"}, core.CodeInvalidArgument},
		{"bidi override in the name", operator, commands.UpdateSite{ID: "fra1", Name: "\u202eFrankfurt"}, core.CodeInvalidArgument},
		{"name too long", operator, commands.UpdateSite{ID: "fra1", Name: strings.Repeat("x", core.MaxSiteName+1)}, core.CodeInvalidArgument},
	} {
		_, err := f.h.UpdateSite(f.ctx, c.actor, c.cmd)
		require.Error(t, err, c.name)
		require.Equal(t, c.code, core.CodeOf(err), "%s: %v", c.name, err)
	}
	s := f.site(t, "fra1")
	require.Equal(t, "Frankfurt 1", s.Name)
	require.EqualValues(t, 1, s.Version)
	require.Zero(t, f.countEvents(t, core.EventSiteUpdated))
	f.requireInvariants(t)
}

// An Idempotency-Key replays the first answer and renames once; the same
// key with another name is IDEMPOTENCY_KEY_REUSED. A final error (here
// NOT_FOUND) is replayed too.
func TestUpdateSiteIdempotencyKey(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cmd := commands.UpdateSite{ID: "fra1", Name: "Frankfurt Main", IdempotencyKey: "rename-1"}
	first, err := f.h.UpdateSite(f.ctx, operator, cmd)
	require.NoError(t, err)
	again, err := f.h.UpdateSite(f.ctx, operator, cmd)
	require.NoError(t, err)
	require.Equal(t, first, again)
	require.EqualValues(t, 2, f.site(t, "fra1").Version)
	require.Equal(t, 1, f.countEvents(t, core.EventSiteUpdated))

	cmd.Name = "Somewhere else"
	_, err = f.h.UpdateSite(f.ctx, operator, cmd)
	require.Equal(t, core.CodeIdempotencyKeyReused, core.CodeOf(err), "%v", err)
	require.Equal(t, "Frankfurt Main", f.site(t, "fra1").Name)

	missing := commands.UpdateSite{ID: "ams1", Name: "Amsterdam", IdempotencyKey: "rename-2"}
	_, err = f.h.UpdateSite(f.ctx, operator, missing)
	require.Equal(t, core.CodeNotFound, core.CodeOf(err), "%v", err)
	// The site appears afterwards; the key still answers what it answered.
	_, err = f.h.CreateSite(f.ctx, operator, commands.CreateSite{ID: "ams1", Name: "AMS"})
	require.NoError(t, err)
	_, err = f.h.UpdateSite(f.ctx, operator, missing)
	require.Equal(t, core.CodeNotFound, core.CodeOf(err), "%v", err)
	require.Equal(t, "AMS", f.site(t, "ams1").Name)
	f.requireInvariants(t)
}

// Renames race: without If-Match each applies in turn (the row lock
// serialises them, so every one succeeds with its own version and event);
// with the same If-Match exactly one wins and the others are CONFLICT.
func TestUpdateSiteConcurrentRenames(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const n = 6
	run := func(ifVersion int64) []error {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, errs[i] = f.h.UpdateSite(f.ctx, operator, commands.UpdateSite{ID: "fra1",
					Name: "Frankfurt " + string(rune('A'+i)) + string(rune('0'+ifVersion)), IfVersion: ifVersion})
			})
		}
		wg.Wait()
		return errs
	}
	for _, err := range run(0) {
		require.NoError(t, err)
	}
	require.EqualValues(t, 1+n, f.site(t, "fra1").Version)
	require.Len(t, f.siteEvents(t, "fra1"), n)
	f.requireInvariants(t)

	won := 0
	for _, err := range run(1 + n) {
		if err == nil {
			won++
			continue
		}
		require.Equal(t, core.CodeConflict, core.CodeOf(err), "%v", err)
	}
	require.Equal(t, 1, won)
	require.EqualValues(t, 2+n, f.site(t, "fra1").Version)
	require.Len(t, f.siteEvents(t, "fra1"), n+1)
	f.requireInvariants(t)
}

// A rename locks the site FOR NO KEY UPDATE, so a pool created in the site
// meanwhile (whose foreign key takes FOR KEY SHARE on the site) does not
// wait for it.
func TestUpdateSiteLockLetsPoolsBeCreated(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tx, err := f.d.Pool.Begin(f.ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(f.ctx) }()
	_, err = db.New(tx).SiteGetForUpdate(f.ctx, "fra1")
	require.NoError(t, err)

	// The bound only turns a wait into a failure; it is never waited out.
	ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()
	_, err = f.h.CreatePool(ctx, operator, commands.CreatePool{ID: "fra1-more", SiteID: "fra1", Kind: commands.PoolBareMetal})
	require.NoError(t, err, "creating a pool waited for the site's rename lock")
}
