package upgrade_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The fixture testdata/release-bf26bb7.sql is the database of the release
// of commit bf26bb7 (the last of 4 December 2026, at migration 0034),
// populated through that release's API and stopped. To make it again:
//
//  1. Build that commit's binary (git worktree add OLD bf26bb7; cd OLD;
//     go build -o bin/compute ./cmd/compute) and start it on an empty
//     database: COMPUTE_WEBHOOK_ALLOW_PRIVATE=true DATABASE_URL=… compute serve --demo.
//  2. With the tokens it printed, run testdata/populate.sh against it: a
//     token issued by a token, a webhook endpoint (with a receiver on
//     loopback), reservations booked, active, released, pending and two
//     longer than 366 days (one active, one booked), and an instance.
//  3. Stop the server (SIGTERM) and dump the database as plain SQL, without
//     the hourly usage windows (36,000 rows for the two long reservations;
//     the test rebuilds them from the log):
//     pg_dump --inserts --no-owner --no-privileges --no-comments
//     --exclude-table-data=public.rm_usage_windows DB |
//     grep -v '^\\\(un\)\?restrict ' > testdata/release-bf26bb7.sql
//  4. Update the ids, secrets and cursor below from that run.
const fixture = "testdata/release-bf26bb7.sql"

// What the fixture's run printed and created.
const (
	// The demo's tenant token (acme, member), and bob's: an operator token
	// issued by the demo's operator token, which issued carol's.
	secretAcme  = "bc_lib1CdkM3m84C5Mchd_Hxc5Xk1mb63qsTQAjEsY9GzY"
	secretBob   = "bc_xDrVmIVHZAQ_fk5ikTKufsWJnRflkjYElMTrC44O5lA"
	secretCarol = "bc_fRTo6AUWfz_h9OZ78blSUOIZPVOXr5YCDxWWuZAIaH4"

	rsvActive     = "rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171" // 2 GPUs, a day, with an instance
	rsvBooked     = "rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4" // an hour, two days ahead, extended once
	rsvReleased   = "rsv_01a24a6e-f959-7444-a522-b4cb947e7f89"
	rsvPending    = "rsv_01a24a6e-f9df-7ea6-8f79-b6ebf52a1e0e" // 8 GPUs: more than were free
	rsvLongBooked = "rsv_01a24a6e-f9a2-781b-8a5a-5ff9d26e2a26" // 797 days, from three days ahead
	rsvLongActive = "rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11" // 700 days, from its booking

	// A cursor of acme's events (GET /v1/events nextCursor) read before the
	// last event of the run, reservation.extended of rsvBooked.
	cursorBeforeExtend = "00000000000004a00000000000000047"
)

// upgradedAt is the business time the test runs at after the upgrade: an
// hour after the fixture's run, inside every reservation's window but the
// booked ones'.
var upgradedAt = time.Date(2026, 12, 6, 9, 30, 0, 0, time.UTC)

// A database written by an earlier release is migrated to this one and
// used: its tokens authenticate, its event cursors resume with nothing
// skipped or repeated, its read models carry what the migrations
// backfilled, its reservations (those longer than 366 days included, which
// that release accepted) can be extended and released, and `compute check`
// finds nothing wrong before and after.
func TestUpgradeFromReleaseBf26bb7(t *testing.T) {
	ctx := context.Background()
	dbURL := restoreFixture(t)
	pool, err := pg.Connect(ctx, dbURL, pg.PoolOptions{MaxConns: 4, IdleInTxTimeout: time.Minute})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	q := db.New(pool)

	require.NoError(t, migrate.Up(ctx, pool), "the release's database migrates")
	require.NoError(t, q.SimClockUse(ctx, true))
	require.NoError(t, q.SimClockSet(ctx, upgradedAt))
	_, err = projections.Rebuild(ctx, pool, projections.NameUsageWindows) // left out of the fixture
	require.NoError(t, err)
	requireNoViolations(t, q)

	// Tokens: all still authenticate, as who they were issued to.
	auth := authn.New(pool, time.Minute)
	acme, err := auth.Authenticate(ctx, secretAcme)
	require.NoError(t, err)
	require.Equal(t, core.Actor{TokenID: acme.TokenID, Tenant: "acme", Identity: "demo-user", Role: core.RoleMember}, acme)
	bob, err := auth.Authenticate(ctx, secretBob)
	require.NoError(t, err)
	require.Equal(t, core.RoleOperator, bob.Role)
	carol, err := auth.Authenticate(ctx, secretCarol)
	require.NoError(t, err)
	require.Equal(t, "carol", carol.Identity)

	// Read models: the list's spec was backfilled from the write model
	// (migration 0036), and every state is as the release left it.
	for id, state := range map[string]core.State{rsvActive: core.ReservationActive, rsvBooked: core.ReservationBooked,
		rsvReleased: core.ReservationReleased, rsvPending: core.ReservationPending,
		rsvLongBooked: core.ReservationBooked, rsvLongActive: core.ReservationActive} {
		rm, err := q.RmReservationGet(ctx, id)
		require.NoError(t, err, id)
		require.Equal(t, string(state), rm.State, id)
	}
	rm, err := q.RmReservationGet(ctx, rsvActive)
	require.NoError(t, err)
	require.JSONEq(t, `{"gpu":{"count":2,"kind":"gpu","model":"H100-80GB"},"vcpu":4,"memoryMb":8192,"diskGb":10,"tolerations":[]}`, string(rm.Spec))

	// Each reservation is dated by its creating event's transaction
	// (migration 0047), so a rebuild of the list, which starts from the
	// write model, gives back the table the release projected.
	var undated int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM reservations r LEFT JOIN rm_reservations m ON m.id = r.id
		WHERE r.created_txid IS NULL OR r.created_txid IS DISTINCT FROM m.created_txid`).Scan(&undated))
	require.Zero(t, undated, "every reservation dated as the list orders it")
	projected, err := q.RmReservationListAll(ctx)
	require.NoError(t, err)
	_, err = projections.Rebuild(ctx, pool, projections.NameReservations)
	require.NoError(t, err)
	rebuilt, err := q.RmReservationListAll(ctx)
	require.NoError(t, err)
	require.Equal(t, projected, rebuilt)

	// The event cursor resumes: the one event after it, then nothing.
	after := acmeEventsAfter(t, q, cursorBeforeExtend)
	require.Len(t, after, 1)
	require.Equal(t, core.EventReservationExtended, after[0].Type)
	last := outbox.Position{TxID: after[0].Txid, Seq: after[0].Seq}.String()
	require.Empty(t, acmeEventsAfter(t, q, last))

	// Commands on the release's reservations.
	h := commands.New(pool, commands.Config{})
	_, err = h.ExtendReservation(ctx, acme, commands.ExtendReservation{ReservationID: rsvBooked,
		NewEnd: time.Date(2026, 12, 8, 12, 18, 36, 0, time.UTC)})
	require.NoError(t, err, "extend a booked reservation")
	// A window longer than 366 days from before the ceiling (migration
	// 0038) keeps its end as its bound: it cannot grow, by the command
	// (COMPUTE_MAX_RESERVATION_LENGTH) nor by the database's constraint,
	// but it can end (migration 0046; before it, every write of the row
	// failed the constraint).
	_, err = h.ExtendReservation(ctx, acme, commands.ExtendReservation{ReservationID: rsvLongBooked,
		NewEnd: time.Date(2029, 2, 14, 0, 0, 0, 0, time.UTC)})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%v", err)
	_, err = pool.Exec(ctx, `UPDATE reservations SET during = tstzrange(lower(during), upper(during) + interval '1 hour')
	                          WHERE id = $1`, rsvLongBooked)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "reservations_max_length", pgErr.ConstraintName)
	for _, id := range []string{rsvActive, rsvLongActive, rsvLongBooked} {
		res, err := h.ReleaseReservation(ctx, acme, commands.ReleaseReservation{ReservationID: id})
		require.NoError(t, err, "release %s", id)
		require.Equal(t, core.ReservationReleased, res.Reservation.State, id)
	}
	// Events are readable once every transaction older than theirs on the
	// cluster has ended (other tests' included): wait for the five.
	types := []string{}
	require.Eventually(t, func() bool {
		types = types[:0]
		for _, e := range acmeEventsAfter(t, q, last) {
			types = append(types, e.Type)
		}
		return len(types) >= 5
	}, 20*time.Second, 5*time.Millisecond, "the new events become visible")
	require.Equal(t, []string{core.EventReservationExtended, core.EventReservationReleased, core.EventInstanceStopping,
		core.EventReservationReleased, core.EventReservationReleased}, types,
		"the new events come after the old cursor's, once each")
	requireNoViolations(t, q)
}

// restoreFixture loads the fixture into a new empty database, dropped when
// t ends, and returns its URL. Transaction ids are the cluster's: the test
// cluster's counter is first moved past the fixture's newest event, as the
// release's own cluster had it, so that its events are below every reader's
// snapshot and the events written after the upgrade come after them.
func restoreFixture(t *testing.T) string {
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

func requireNoViolations(t *testing.T, q *db.Queries) {
	t.Helper()
	vs, err := invariants.Check(context.Background(), q)
	require.NoError(t, err)
	require.Empty(t, vs)
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
