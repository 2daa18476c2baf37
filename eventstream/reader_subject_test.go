package eventstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

// A page of one subject (GET /v1/events?subject=reservations/…) finds the subject's events
// however many other events lie between them, and reads the subject's rows only. Before, no
// read could ask for a subject: the console paged the log of reservation events and kept
// the reservation's, and after ten pages gave up, so a reservation made after the first
// thousand of them showed no history at all. Here the subject's two events lie 20,000
// events (forty pages of the largest page) apart. Counted as in
// TestTypedPageReadsOnlyItsTypes.
func TestSubjectPageReadsOnlyItsEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	const subject = "reservations/rsv_1"
	booked := appendOne(t, d, "A", "reservation.booked", subject)
	const flood = 20_000
	_, err := d.Pool.Exec(ctx, `INSERT INTO outbox (id, type, tenant_id, subject, data)
		SELECT gen_random_uuid(), 'reservation.booked', (ARRAY[NULL, 'A', 'B'])[1 + g % 3], 'reservations/f' || g, '{}'
		  FROM generate_series(1, $1::int) g`, flood)
	require.NoError(t, err)
	appendOne(t, d, "B", "reservation.booked", "reservations/rsv_10") // sorts right after the subject
	released := appendOne(t, d, "A", "reservation.released", subject)
	appendOne(t, d, "A", "reservation.booked", "reservations/rsv_0") // sorts right before it
	waitVisible(t, d, flood+4)
	_, err = d.Pool.Exec(ctx, "ANALYZE outbox") // as autovacuum would
	require.NoError(t, err)

	capture := &pgtest.LastStatement{Prefix: "-- name: OutboxReadAfter"}
	pool, err := pg.Connect(ctx, d.URL, pg.PoolOptions{MaxConns: 2, IdleInTxTimeout: time.Minute, Tracer: capture})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	r := eventstream.NewReader(pool)

	for _, tc := range []struct {
		name  string
		scope eventstream.Scope
		want  []uuid.UUID
	}{
		{"its tenant", eventstream.Scope{Tenant: "A", Subject: subject}, []uuid.UUID{booked, released}},
		{"an operator", eventstream.Scope{AllTenants: true, Subject: subject}, []uuid.UUID{booked, released}},
		{"with types", eventstream.Scope{Tenant: "A", Subject: subject, Types: []string{"reservation.released"}}, []uuid.UUID{released}},
	} {
		page, err := r.Page(ctx, tc.scope, outbox.Position{}, eventstream.MaxLimit)
		require.NoError(t, err)
		require.Equal(t, tc.want, idsOf(page.Events), tc.name)

		sql, args := capture.Last()
		require.NotEmpty(t, sql, "the page sent no read of the outbox")
		for _, mode := range []string{"auto", "force_generic_plan"} {
			read := outboxRowsRead(t, d.URL, mode, sql, args)
			require.LessOrEqual(t, read, 10, "outbox rows read for %s's page of %s past %d events of other subjects (%s plan)",
				tc.name, subject, flood, mode)
		}
	}

	// Paging on, one event a page, finds each in log order, and past the last nothing; the
	// short page's cursor is the log's head, as for any filtered page.
	scope := eventstream.Scope{Tenant: "A", Subject: subject}
	var got []uuid.UUID
	after := outbox.Position{}
	for range 3 {
		page, err := r.Page(ctx, scope, after, 1)
		require.NoError(t, err)
		got = append(got, idsOf(page.Events)...)
		require.False(t, page.Next.Less(after), "the cursor went back")
		after = page.Next
	}
	require.Equal(t, []uuid.UUID{booked, released}, got)
	all := waitVisible(t, d, flood+4)
	require.Equal(t, all[len(all)-1].Position, after)
}

// A tenant asking for another tenant's subject reads nothing, as for a subject nothing was
// written about: not the other tenant's events, nor whether there are any.
func TestSubjectOfAnotherTenantReadsEmpty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	appendOne(t, d, "A", "reservation.booked", "reservations/rsv_a")
	appendOne(t, d, "A", "reservation.released", "reservations/rsv_a")
	appendOne(t, d, "", "node.lost", "nodes/n1")
	mine := appendOne(t, d, "B", "reservation.booked", "reservations/rsv_b")
	all := waitVisible(t, d, 4)
	r := eventstream.NewReader(d.Pool)

	for _, subject := range []string{"reservations/rsv_a", "nodes/n1", "reservations/none"} {
		page, err := r.Page(ctx, eventstream.Scope{Tenant: "B", Subject: subject}, outbox.Position{}, 0)
		require.NoError(t, err)
		require.Empty(t, page.Events, "tenant B's page of %s", subject)
		require.Equal(t, all[len(all)-1].Position, page.Next, "the cursor of B's empty page of %s", subject)
	}
	page, err := r.Page(ctx, eventstream.Scope{Tenant: "B", Subject: "reservations/rsv_b"}, outbox.Position{}, 0)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{mine}, idsOf(page.Events))
	// A scope of no tenant (never made by ScopeFor) sees nothing, not every tenant's.
	page, err = r.Page(ctx, eventstream.Scope{Subject: "reservations/rsv_a"}, outbox.Position{}, 0)
	require.NoError(t, err)
	require.Empty(t, page.Events)
}

// A subject filter is checked before it reaches SQL, and the live fan-out applies it as
// the read does.
func TestScopeWithSubject(t *testing.T) {
	t.Parallel()
	scope, err := eventstream.ScopeFor(core.Actor{Tenant: "A"}, nil)
	require.NoError(t, err)
	for _, bad := range []string{string(make([]byte, eventstream.MaxSubjectLength+1)), "reservations/\n", "\xff"} {
		_, err := scope.WithSubject(bad)
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%q", bad)
	}
	scope, err = scope.WithSubject("reservations/rsv_1")
	require.NoError(t, err)
	require.True(t, scope.Matches(core.Event{TenantID: "A", Subject: "reservations/rsv_1"}))
	require.False(t, scope.Matches(core.Event{TenantID: "A", Subject: "reservations/rsv_2"}))
	require.False(t, scope.Matches(core.Event{TenantID: "B", Subject: "reservations/rsv_1"}))
}
