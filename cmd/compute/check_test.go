package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
)

// `compute check` changes nothing, its schema included: on a database
// behind this binary's migrations (the old release's, while its processes
// still run) it fails saying to run `compute migrate`, and applies none.
// It used to apply them all, under the running processes, before checking.
func TestCheckDoesNotMigrate(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.NewEmpty(t)
	t.Setenv("DATABASE_URL", dbURL)
	cfg, err := config.Load()
	require.NoError(t, err)
	logger := slog.New(slog.DiscardHandler)
	migrated := func() bool {
		conn, err := pgx.Connect(ctx, dbURL)
		require.NoError(t, err)
		defer conn.Close(ctx)
		var table *string
		require.NoError(t, conn.QueryRow(ctx, `SELECT to_regclass('goose_db_version')::text`).Scan(&table))
		return table != nil
	}

	err = checkCmd(ctx, cfg, logger)
	require.ErrorContains(t, err, "the database is at migration 0000 and this release's schema at ")
	require.ErrorContains(t, err, "run `compute migrate` first")
	require.False(t, migrated(), "check applied migrations")

	require.NoError(t, migrateCmd(ctx, cfg, logger))
	require.NoError(t, checkCmd(ctx, cfg, logger), "check on a migrated database")
}

// `compute check` holds the read models to the write model: a read-model
// row changed behind its projection's back fails it (exit 1), naming the
// row and the rebuild that repairs it, while rows its projection has not
// yet reached are reported as behind and fail nothing.
func TestCheckReportsReadModelDivergence(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	t.Setenv("DATABASE_URL", d.URL)
	cfg, err := config.Load()
	require.NoError(t, err)
	logger := slog.New(slog.DiscardHandler)
	h := commands.New(d.Pool, commands.Config{})
	commandstest.Seed(t, d, h, 0)
	commandstest.Node(t, h, "n1", core.GPULayout{Mode: core.GPUExclusive}, core.GPULayout{Mode: core.GPUExclusive})
	reserve := func() string {
		res, err := h.CreateReservation(ctx, commandstest.TenantA, commands.CreateReservation{PoolID: commandstest.Pool, GPUs: 1,
			Start: pgtest.SimEpoch.Add(time.Hour), End: pgtest.SimEpoch.Add(2 * time.Hour)})
		require.NoError(t, err)
		return res.Reservation.ID
	}
	first := reserve()
	catchUp := projectionsCatchUp(t, d)
	catchUp()
	check := func() (string, error) {
		var out strings.Builder
		err := checkTo(ctx, &out, cfg, logger)
		return out.String(), err
	}

	report, err := check()
	require.NoError(t, err, report)
	require.Contains(t, report, "0 invariant violations\n0 read-model rows diverging\n")

	second := reserve() // not yet projected
	report, err = check()
	require.NoError(t, err, report)
	require.Contains(t, report, "READ MODEL rm_reservations: 0 rows diverging, 1 behind the reservations projection (not yet applied)\n")
	require.NotContains(t, report, "DIVERGENCE")
	require.NotContains(t, report, second)

	_, err = d.Pool.Exec(ctx, "UPDATE rm_reservations SET state = 'released' WHERE id = $1", first)
	require.NoError(t, err)
	report, err = check()
	require.EqualError(t, err, "1 read-model rows diverging", report)
	require.Contains(t, report, "DIVERGENCE rm_reservations "+first+": differs from the write model\n")
	require.Contains(t, report, "READ MODEL rm_reservations: 1 rows diverging, 1 behind the reservations projection; "+
		"repair: compute projections rebuild reservations\n")

	_, err = projections.Rebuild(ctx, d.Pool, projections.NameReservations)
	require.NoError(t, err)
	catchUp()
	report, err = check()
	require.NoError(t, err, report)
	require.Contains(t, report, "0 read-model rows diverging\n")
	require.NotContains(t, report, "READ MODEL")
}

// projectionsCatchUp returns a function that runs every projection, as
// `compute serve`'s dispatcher does, until each has applied the whole log
// (events become readable only below the cluster's snapshot xmin, so it
// polls with a deadline).
func projectionsCatchUp(t *testing.T, d *pgtest.DB) func() {
	var sinks []outbox.TxSink
	for _, p := range projections.All() {
		sinks = append(sinks, p)
	}
	disp := outbox.NewTxGroup(d.Pool, "check-test", sinks, nil)
	return func() {
		t.Helper()
		ctx := context.Background()
		var last outbox.Position
		require.NoError(t, d.Pool.QueryRow(ctx,
			"SELECT txid, seq FROM outbox ORDER BY txid DESC, seq DESC LIMIT 1").Scan(&last.TxID, &last.Seq))
		require.Eventually(t, func() bool {
			_, err := disp.RunOnce(ctx)
			require.NoError(t, err)
			for _, id := range disp.SinkIDs() {
				cur, err := outbox.CursorOf(ctx, d.Q, id)
				require.NoError(t, err)
				if cur.Less(last) {
					return false
				}
			}
			return true
		}, 20*time.Second, 2*time.Millisecond)
	}
}
