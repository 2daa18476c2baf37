package main

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

// A database restored into another cluster (pg_dump, then pg_restore into a
// fresh initdb) keeps its log's transaction ids while the cluster counts
// from a few hundred: what the server wrote would be numbered below the
// log, where no reader looks (a booking no read model shows, webhooks,
// billing and the revocation feed standing still). Every process that
// opens the database refuses it, before writing anything, and says how to
// move the cluster's counter on; once it is past the log, it opens.
func TestDatabaseRestoredIntoAClusterBehindItsLogIsRefused(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	cfg := config.Config{DatabaseURL: d.URL}
	_, _, closeDB, err := openDatabase(t.Context(), cfg, slog.New(slog.DiscardHandler), "compute-test")
	require.NoError(t, err)
	closeDB()

	// The restored log's cursors, from the old cluster: far ahead of this
	// one's counter, in the same epoch and in the next one, whose
	// pg_resetwal --epoch is one more.
	for i, ahead := range []string{"pg_snapshot_xmax(pg_current_snapshot())::text::bigint + 100000",
		"(pg_snapshot_xmax(pg_current_snapshot())::text::bigint | (1::bigint << 32))"} {
		_, err = d.Pool.Exec(t.Context(), "INSERT INTO outbox_cursors (sink, txid, seq) VALUES ('restored', ("+ahead+")::text::xid8, 7) "+
			"ON CONFLICT (sink) DO UPDATE SET txid = EXCLUDED.txid")
		require.NoError(t, err)

		_, _, _, err = openDatabase(t.Context(), cfg, slog.New(slog.DiscardHandler), "compute-test")
		require.ErrorIs(t, err, outbox.ErrNumberedBehind)
		require.ErrorContains(t, err, fmt.Sprintf("pg_resetwal --epoch=%d -D", i+1))
		require.ErrorContains(t, err, "Backup and restore")
	}

	_, err = d.Pool.Exec(t.Context(), "DELETE FROM outbox_cursors WHERE sink = 'restored'")
	require.NoError(t, err)
	_, _, closeDB, err = openDatabase(t.Context(), cfg, slog.New(slog.DiscardHandler), "compute-test")
	require.NoError(t, err)
	closeDB()
}
