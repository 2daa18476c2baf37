package eventstream_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

// Pages follow each other through Next with no gap and no repeat, in log
// order; an empty page at the end keeps the cursor.
func TestPageInOrderAcrossPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	want := appendN(t, d, "t1", "test.happened", 7)
	log := waitVisible(t, d, 7)
	r := eventstream.NewReader(d.Pool)
	scope := eventstream.Scope{Tenant: "t1"}

	var got []uuid.UUID
	var sizes []int
	after := outbox.Position{}
	for range 4 {
		page, err := r.Page(ctx, scope, after, 3)
		require.NoError(t, err)
		sizes = append(sizes, len(page.Events))
		got = append(got, idsOf(page.Events)...)
		if len(page.Events) > 0 {
			require.Equal(t, page.Events[len(page.Events)-1].Position, page.Next)
		} else {
			require.Equal(t, after, page.Next, "an empty page keeps the cursor")
		}
		after = page.Next
	}
	require.Equal(t, []int{3, 3, 1, 0}, sizes)
	require.Equal(t, want, got)
	require.Equal(t, log[6].Position, after)
}

// A tenant sees only its own events; an operator sees every tenant's and
// the events that belong to no tenant.
func TestPageTenantScoping(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	a1 := appendOne(t, d, "A", "x.made", "a1")
	b1 := appendOne(t, d, "B", "x.made", "b1")
	sys := appendOne(t, d, "", "fleet.changed", "sys")
	a2 := appendOne(t, d, "A", "x.made", "a2")
	waitVisible(t, d, 4)
	r := eventstream.NewReader(d.Pool)

	page := func(actor core.Actor) []uuid.UUID {
		scope, err := eventstream.ScopeFor(actor, nil)
		require.NoError(t, err)
		p, err := r.Page(ctx, scope, outbox.Position{}, 0)
		require.NoError(t, err)
		return idsOf(p.Events)
	}
	require.Equal(t, []uuid.UUID{a1, a2}, page(core.Actor{Tenant: "A", Role: core.RoleViewer}))
	require.Equal(t, []uuid.UUID{b1}, page(core.Actor{Tenant: "B", Role: core.RoleMember}))
	require.Equal(t, []uuid.UUID{a1, b1, sys, a2}, page(core.Actor{Tenant: "ops", Role: core.RoleOperator}))

	_, err := eventstream.ScopeFor(core.Actor{Role: core.RoleMember}, nil)
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err), "no tenant, no events")
}

// The types filter keeps only the listed types, for tenants and operators.
func TestPageTypesFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	created := appendOne(t, d, "A", "reservation.created", "r1")
	appendOne(t, d, "A", "reservation.extended", "r1")
	released := appendOne(t, d, "A", "reservation.released", "r1")
	otherTenant := appendOne(t, d, "B", "reservation.created", "r2")
	waitVisible(t, d, 4)
	r := eventstream.NewReader(d.Pool)
	types := []string{"reservation.created", "reservation.released"}

	p, err := r.Page(ctx, eventstream.Scope{Tenant: "A", Types: types}, outbox.Position{}, 10)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{created, released}, idsOf(p.Events))
	p, err = r.Page(ctx, eventstream.Scope{AllTenants: true, Types: types}, outbox.Position{}, 10)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{created, released, otherTenant}, idsOf(p.Events))
}

func TestPageRejectsBadLimits(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	r := eventstream.NewReader(d.Pool)
	for _, limit := range []int{-1, eventstream.MaxLimit + 1} {
		_, err := r.Page(context.Background(), operator, outbox.Position{}, limit)
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "limit %d", limit)
	}
	_, err := r.Page(context.Background(), operator, outbox.Position{}, eventstream.MaxLimit)
	require.NoError(t, err)
}

// Once retention has pruned a prefix of the log, a cursor below the oldest
// retained event is CURSOR_EXPIRED (conservatively including the last
// pruned event itself); cursors inside the retained log and the zero
// cursor still work.
func TestCursorBelowRetainedHistoryExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	appendN(t, d, "A", "x.made", 5)
	log := waitVisible(t, d, 5)
	r := eventstream.NewReader(d.Pool)

	_, err := r.Page(ctx, operator, log[0].Position, 10)
	require.NoError(t, err, "nothing pruned yet: every cursor is valid")

	// Retention prunes the two oldest events (a prefix, in log order).
	_, err = d.Pool.Exec(ctx, "DELETE FROM outbox WHERE id = ANY($1)", []uuid.UUID{log[0].ID, log[1].ID})
	require.NoError(t, err)

	for _, expired := range []outbox.Position{log[0].Position, log[1].Position} {
		_, err = r.Page(ctx, operator, expired, 10)
		require.Equal(t, core.CodeCursorExpired, core.CodeOf(err), "cursor %s", expired)
	}
	p, err := r.Page(ctx, operator, log[2].Position, 10)
	require.NoError(t, err)
	require.Equal(t, idsOf(log[3:]), idsOf(p.Events))
	p, err = r.Page(ctx, operator, outbox.Position{}, 10)
	require.NoError(t, err)
	require.Equal(t, idsOf(log[2:]), idsOf(p.Events), "no cursor: from the oldest retained event")

	_, err = d.Pool.Exec(ctx, "DELETE FROM outbox")
	require.NoError(t, err)
	_, err = r.Page(ctx, operator, log[4].Position, 10)
	require.Equal(t, core.CodeCursorExpired, core.CodeOf(err), "everything pruned")
}

// A cursor this database never numbered an event with (at or above the
// next transaction id it will assign: another installation's, or one from
// before a restore) is CURSOR_EXPIRED; it would otherwise skip every event
// the log numbers below it. The newest event's cursor still pages
// normally; a position no event has, just past it in the same
// transaction, was never handed out and expires.
func TestCursorAheadOfTheLogExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	appendN(t, d, "A", "x.made", 3)
	log := waitVisible(t, d, 3)
	r := eventstream.NewReader(d.Pool)

	newest := log[len(log)-1].Position
	p, err := r.Page(ctx, operator, newest, 10)
	require.NoError(t, err)
	require.Empty(t, p.Events)
	past := outbox.Position{TxID: newest.TxID, Seq: newest.Seq + 1}
	_, err = r.Page(ctx, operator, past, 10)
	require.Equal(t, core.CodeCursorExpired, core.CodeOf(err), "cursor %s", past)
	require.ErrorContains(t, err, "no event of this log")
	var next uint64
	require.NoError(t, d.Pool.QueryRow(ctx, "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").Scan(&next))
	for _, ahead := range []outbox.Position{{TxID: next + 1000}, {TxID: 1 << 62, Seq: 1}} {
		_, err := r.Page(ctx, operator, ahead, 10)
		require.Equal(t, core.CodeCursorExpired, core.CodeOf(err), "cursor %s", ahead)
		require.ErrorContains(t, err, "ahead of this event log")
	}
}

// A cursor kept from before the database was restored to an earlier point
// names an event the restored log does not have, and once the log's new
// events pass it (a dump restored into the same cluster numbers them
// above every old transaction id; a point-in-time recovery reuses the
// lost ones) it is no longer ahead of the log. It is CURSOR_EXPIRED all
// the same: resumed from, it would skip the new events numbered below it,
// or leave its client with what it derived from events that no longer
// happened, without a word.
func TestCursorFromBeforeARestoreExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	appendN(t, d, "A", "x.made", 3)
	log := waitVisible(t, d, 3)
	r := eventstream.NewReader(d.Pool)
	kept := log[2].Position // a client's cursor, after the backup was taken
	_, err := r.Page(ctx, operator, kept, 10)
	require.NoError(t, err)

	// Restored to the point after log[1]: log[2] never happened, and the
	// log goes on past the kept cursor.
	_, err = d.Pool.Exec(ctx, "DELETE FROM outbox WHERE id = $1", log[2].ID)
	require.NoError(t, err)
	appendN(t, d, "A", "x.remade", 2)
	now := waitVisible(t, d, 4)
	require.True(t, kept.Less(now[len(now)-1].Position), "the new events are past the kept cursor")

	_, err = r.Page(ctx, operator, kept, 10)
	require.Equal(t, core.CodeCursorExpired, core.CodeOf(err))
	require.ErrorContains(t, err, "no event of this log")
	p, err := r.Page(ctx, operator, log[1].Position, 10)
	require.NoError(t, err, "a cursor from before the restore point is still this log's")
	require.Equal(t, idsOf(now[2:]), idsOf(p.Events))
}

// A client that has read everything in its scope keeps a valid cursor for
// as long as it keeps polling, however long its own scope stays quiet:
// retention keeps only the newest event of the whole log, so a cursor
// left at the client's last event of its own (another tenant's events,
// or other types, moving on meanwhile) would expire although it missed
// nothing. An empty or short page therefore moves the cursor up to what
// the read covered.
func TestCaughtUpCursorSurvivesRetentionWhileItsScopeIsQuiet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	a1 := appendOne(t, d, "A", "x.made", "a1")
	r := eventstream.NewReader(d.Pool)
	scopes := map[string]eventstream.Scope{
		"tenant":         {Tenant: "A"},
		"types filtered": {AllTenants: true, Types: []string{"x.made"}},
	}
	cursors := map[string]outbox.Position{}
	waitVisible(t, d, 1)
	for name, scope := range scopes {
		p, err := r.Page(ctx, scope, outbox.Position{}, 10)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{a1}, idsOf(p.Events), name)
		cursors[name] = p.Next
	}

	// Only other scopes' events follow; each poll finds nothing new.
	appendN(t, d, "B", "y.made", 3)
	log := waitVisible(t, d, 4)
	for name, scope := range scopes {
		p, err := r.Page(ctx, scope, cursors[name], 10)
		require.NoError(t, err)
		require.Empty(t, p.Events, name)
		require.False(t, p.Next.Less(cursors[name]), "%s: the cursor never moves back", name)
		cursors[name] = p.Next
	}

	// Retention prunes every event but the newest (a prefix of the log),
	// a1 among them.
	_, err := d.Pool.Exec(ctx, "DELETE FROM outbox WHERE id = ANY($1)", idsOf(log[:3]))
	require.NoError(t, err)
	for name, scope := range scopes {
		p, err := r.Page(ctx, scope, cursors[name], 10)
		require.NoError(t, err, "%s: a caught-up client missed nothing and must not be told its cursor expired", name)
		require.Empty(t, p.Events, name)
	}

	// The advanced cursor still sees the scope's next event.
	a2 := appendOne(t, d, "A", "x.made", "a2")
	waitVisible(t, d, 2)
	for name, scope := range scopes {
		p, err := r.Page(ctx, scope, cursors[name], 10)
		require.NoError(t, err)
		require.Equal(t, []uuid.UUID{a2}, idsOf(p.Events), name)
	}
}
