package upgrade_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/invariants"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/migrate"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/webhook"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A database written by an earlier release is migrated to this one and
// used: its tokens authenticate, its event cursors resume with nothing
// skipped or repeated, its read models carry what the migrations
// backfilled and rebuild to what the release projected, its reservations
// (those longer than 366 days included, which the oldest release
// accepted) can be extended and released, its webhook endpoint gets the
// new events and only them, and `compute check` finds nothing wrong
// before and after.
func TestUpgrade(t *testing.T) {
	for name, r := range releases {
		t.Run("from release "+name, func(t *testing.T) {
			t.Parallel()
			testUpgrade(t, r)
		})
	}
}

func testUpgrade(t *testing.T, r release) {
	ctx := context.Background()
	dbURL := restoreFixture(t, r.fixture)
	pool, err := pg.Connect(ctx, dbURL, pg.PoolOptions{MaxConns: 4, IdleInTxTimeout: time.Minute})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	q := db.New(pool)

	require.NoError(t, migrate.Up(ctx, pool), "the release's database migrates")
	require.NoError(t, q.SimClockUse(ctx, true))
	require.NoError(t, q.SimClockSet(ctx, r.upgradedAt))
	_, err = projections.Rebuild(ctx, pool, projections.NameUsageWindows) // left out of the fixture
	require.NoError(t, err)
	requireNoViolations(t, pool)

	// Tokens: all still authenticate, as who they were issued to.
	auth := authn.New(pool, time.Minute)
	acme, err := auth.Authenticate(ctx, r.secretAcme)
	require.NoError(t, err)
	require.Equal(t, core.Actor{TokenID: acme.TokenID, Tenant: "acme", Identity: "demo-user", Role: core.RoleMember}, acme)
	bob, err := auth.Authenticate(ctx, r.secretBob)
	require.NoError(t, err)
	require.Equal(t, core.RoleOperator, bob.Role)
	carol, err := auth.Authenticate(ctx, r.secretCarol)
	require.NoError(t, err)
	require.Equal(t, "carol", carol.Identity)

	// Read models: the list's spec was backfilled from the write model
	// (migration 0036), and every state is as the release left it.
	for id, state := range r.states {
		rm, err := q.RmReservationGet(ctx, id)
		require.NoError(t, err, id)
		require.Equal(t, string(state), rm.State, id)
	}
	rm, err := q.RmReservationGet(ctx, r.rsvActive)
	require.NoError(t, err)
	require.JSONEq(t, r.spec, string(rm.Spec))

	// Each reservation is dated by its creating event's transaction
	// (migration 0047), so a rebuild of the list, which starts from the
	// write model, gives back the table the release projected; so does a
	// rebuild of every other read model.
	var undated int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM reservations r LEFT JOIN rm_reservations m ON m.id = r.id
		WHERE r.created_txid IS NULL OR r.created_txid IS DISTINCT FROM m.created_txid`).Scan(&undated))
	require.Zero(t, undated, "every reservation dated as the list orders it")
	for _, p := range projections.All() {
		projected := readModel(t, pool, p.Tables())
		_, err = projections.Rebuild(ctx, pool, p.ID())
		require.NoError(t, err)
		requireSameRows(t, projected, readModel(t, pool, p.Tables()), "rebuilt "+p.ID())
	}

	if r.more != nil {
		r.more(t, upgraded{pool: pool, q: q, auth: auth})
	}

	// The event cursor resumes: the one event after it, then nothing.
	after := acmeEventsAfter(t, q, r.cursorBeforeExtend)
	require.Len(t, after, 1)
	require.Equal(t, core.EventReservationExtended, after[0].Type)
	last := outbox.Position{TxID: after[0].Txid, Seq: after[0].Seq}.String()
	require.Empty(t, acmeEventsAfter(t, q, last))
	endpoint, delivered := webhookDeliveries(t, pool)

	// Commands on the release's reservations.
	h := commands.New(pool, commands.Config{})
	_, err = h.ExtendReservation(ctx, acme, commands.ExtendReservation{ReservationID: r.rsvBooked, NewEnd: r.bookedEnd})
	require.NoError(t, err, "extend a booked reservation")
	if r.rsvLongBooked != "" {
		// A window longer than 366 days from before the ceiling (migration
		// 0038) keeps its end as its bound: it cannot grow, by the command
		// (COMPUTE_MAX_RESERVATION_LENGTH) nor by the database's
		// constraint, but it can end (migration 0046; before it, every
		// write of the row failed the constraint).
		_, err = h.ExtendReservation(ctx, acme, commands.ExtendReservation{ReservationID: r.rsvLongBooked,
			NewEnd: time.Date(2029, 2, 14, 0, 0, 0, 0, time.UTC)})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%v", err)
		_, err = pool.Exec(ctx, `UPDATE reservations SET during = tstzrange(lower(during), upper(during) + interval '1 hour')
		                          WHERE id = $1`, r.rsvLongBooked)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr)
		require.Equal(t, "reservations_max_length", pgErr.ConstraintName)
	}
	for _, id := range append([]string{r.rsvActive}, r.rsvRelease...) {
		res, err := h.ReleaseReservation(ctx, acme, commands.ReleaseReservation{ReservationID: id})
		require.NoError(t, err, "release %s", id)
		require.Equal(t, core.ReservationReleased, res.Reservation.State, id)
	}
	// Events are readable once every transaction older than theirs on the
	// cluster has ended (other tests' included): wait for them all.
	want := []string{core.EventReservationExtended, core.EventReservationReleased, core.EventInstanceStopping}
	for range r.rsvRelease {
		want = append(want, core.EventReservationReleased)
	}
	var events []db.Outbox
	require.Eventually(t, func() bool {
		events = acmeEventsAfter(t, q, last)
		return len(events) >= len(want)
	}, 20*time.Second, 5*time.Millisecond, "the new events become visible")
	types := []string{}
	for _, e := range events {
		types = append(types, e.Type)
	}
	require.Equal(t, want, types, "the new events come after the old cursor's, once each")

	// The release's webhook endpoint gets a delivery of each new event, and
	// of nothing else: the scheduler goes on from the release's cursor, and
	// an endpoint made before migration 0053 dated endpoints gets them too.
	disp := outbox.NewTxDispatcher(pool, "upgrade-test", webhook.New(pool, h, webhook.Config{}, nil).Scheduler(), nil)
	newEvents := map[uuid.UUID]bool{}
	for _, e := range events {
		newEvents[e.ID] = true
	}
	require.Eventually(t, func() bool {
		_, err := disp.RunOnce(ctx)
		require.NoError(t, err)
		_, now := webhookDeliveries(t, pool)
		return len(now) >= len(delivered)+len(events)
	}, 20*time.Second, 5*time.Millisecond, "the new events are scheduled")
	_, now := webhookDeliveries(t, pool)
	require.Len(t, now, len(delivered)+len(events), "endpoint %s", endpoint)
	for id := range now {
		require.True(t, delivered[id] || newEvents[id], "event %s delivered once, old or new", id)
	}
	requireNoViolations(t, pool)
}

// restoreFixture loads fixture into a new empty database, dropped when
// t ends, and returns its URL. Transaction ids are the cluster's: the test
// cluster's counter is first moved past the fixture's newest event, as the
// release's own cluster had it, so that its events are below every reader's
// snapshot and the events written after the upgrade come after them.
func restoreFixture(t *testing.T, fixture string) string {
	t.Helper()
	ctx := context.Background()
	sqlText, err := os.ReadFile(fixture)
	require.NoError(t, err)

	dbURL := pgtest.NewEmpty(t)
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.PgConn().Exec(ctx, string(sqlText)).ReadAll() // the simple protocol: many statements
	require.NoError(t, err, "restore %s", fixture)
	var newest uint64
	require.NoError(t, conn.QueryRow(ctx, `SELECT max(txid)::text::bigint FROM public.outbox`).Scan(&newest))
	for {
		var xid uint64
		require.NoError(t, conn.QueryRow(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&xid))
		if xid > newest {
			break
		}
	}
	return dbURL
}

// requireNoViolations fails on what fails `compute check`: a broken
// invariant, or a read-model row that disagrees with the write model
// although its projection has applied every event of it.
func requireNoViolations(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	vs, err := invariants.Check(context.Background(), db.New(pool))
	require.NoError(t, err)
	require.Empty(t, vs)
	checks, err := projections.CheckAgainstWriteModel(context.Background(), pool, 10)
	require.NoError(t, err)
	for _, c := range checks {
		require.Empty(t, c.Rows, c.Table)
		require.Zero(t, c.Diverging, c.Table)
	}
}

// acmeEventsAfter reads tenant acme's events after cursor, as GET
// /v1/events?after= does.
func acmeEventsAfter(t *testing.T, q *db.Queries, cursor string) []db.Outbox {
	t.Helper()
	p, err := outbox.ParsePosition(cursor)
	require.NoError(t, err)
	rows, err := q.OutboxReadAfterForTenant(context.Background(), db.OutboxReadAfterForTenantParams{
		TenantID: "acme", AfterTxid: p.TxID, AfterSeq: p.Seq, Types: []string{}, MaxRows: 500})
	require.NoError(t, err)
	return rows
}

// readModel reads every row of tables as JSON, keyed by table, without the
// versions of the fleet's groups of fields (migration 0040): a rebuild
// seeds each group at its aggregate's version (RmFleetNodeSeed), where the
// live projection has the version of the event that last wrote the group
// (and migration 0057 put the scalars at 1). Both are at most the
// aggregate's version, so every event after them applies alike.
func readModel(t *testing.T, pool *pgxpool.Pool, tables []string) map[string][]string {
	t.Helper()
	rows := map[string][]string{}
	for _, table := range tables {
		r, err := pool.Query(context.Background(), `SELECT (to_jsonb(t) - ARRAY['scheduling_version', 'state_version',
			'reasons_version', 'conditions_version', 'scalars_version', 'mode_version', 'status_version'])::text
			FROM `+pgx.Identifier{table}.Sanitize()+` t ORDER BY 1`)
		require.NoError(t, err)
		rows[table], err = pgx.CollectRows(r, pgx.RowTo[string])
		require.NoError(t, err)
	}
	return rows
}

// requireSameRows fails with the rows that differ, table by table.
func requireSameRows(t *testing.T, want, got map[string][]string, msg string) {
	t.Helper()
	for table := range want {
		only := func(a, b []string) []string {
			in := map[string]bool{}
			for _, r := range b {
				in[r] = true
			}
			var out []string
			for _, r := range a {
				if !in[r] {
					out = append(out, r)
				}
			}
			return out
		}
		require.Empty(t, only(want[table], got[table]), "%s: %s rows gone; new: %v", msg, table, only(got[table], want[table]))
		require.Empty(t, only(got[table], want[table]), "%s: %s rows new", msg, table)
	}
}

// webhookDeliveries returns the fixture's one webhook endpoint and the
// events delivered to it or to be.
func webhookDeliveries(t *testing.T, pool *pgxpool.Pool) (string, map[uuid.UUID]bool) {
	t.Helper()
	ctx := context.Background()
	var endpoint string
	require.NoError(t, pool.QueryRow(ctx, `SELECT id FROM webhook_endpoints`).Scan(&endpoint))
	rows, err := pool.Query(ctx, `SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1`, endpoint)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	events := map[uuid.UUID]bool{}
	for _, id := range ids {
		events[id] = true
	}
	return endpoint, events
}
