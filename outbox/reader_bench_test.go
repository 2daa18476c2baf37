package outbox_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

// orSelect is the shape of watermill-sql's default PostgreSQL SelectQuery
// (v3/v4), pointed at our tables: the cursor comes from the offsets row
// (locked FOR UPDATE) and the predicate is an OR over (txid, seq) rather
// than a row comparison, which the planner cannot turn into one index range.
const orSelect = `
SELECT * FROM (
  WITH last_processed AS (
    SELECT txid, seq FROM outbox_cursors WHERE sink = 'bench' FOR UPDATE
  )
  SELECT id, txid, seq, type, tenant_id, subject, data, time FROM outbox
   WHERE ((txid = (SELECT txid FROM last_processed) AND seq > (SELECT seq FROM last_processed))
          OR txid > (SELECT txid FROM last_processed))
     AND txid < pg_snapshot_xmin(pg_current_snapshot())
) AS messages
ORDER BY txid, seq
LIMIT 100`

// seedBacklog inserts n committed events in one statement, spread over
// transaction ids below the current frontier (several rows per txid when
// the cluster is young), and returns the position half-way through.
func seedBacklog(b *testing.B, d *pgtest.DB, n int) (outbox.Position, int) {
	ctx := context.Background()
	var xmin uint64
	require.NoError(b, d.Pool.QueryRow(ctx, "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint").Scan(&xmin))
	perTx := max(1, (n+int(xmin)-3)/(int(xmin)-2))
	_, err := d.Pool.Exec(ctx, `
INSERT INTO outbox (id, txid, type, tenant_id, subject, data)
SELECT gen_random_uuid(), (i / $2 + 1)::text::xid8, 'bench.event', 't1', 'node/' || i, jsonb_build_object('i', i)
  FROM generate_series(0, $1 - 1) AS i`, n, perTx)
	require.NoError(b, err)
	_, err = d.Pool.Exec(ctx, "ANALYZE outbox")
	require.NoError(b, err)
	var mid outbox.Position
	require.NoError(b, d.Pool.QueryRow(ctx,
		"SELECT txid::text::bigint, seq FROM outbox ORDER BY txid, seq OFFSET $1 LIMIT 1", n/2).Scan(&mid.TxID, &mid.Seq))
	_, err = d.Pool.Exec(ctx, "INSERT INTO outbox_cursors (sink, txid, seq) VALUES ('bench', $1::text::xid8, $2)",
		fmt.Sprint(mid.TxID), mid.Seq)
	require.NoError(b, err)
	return mid, perTx
}

// BenchmarkReadAfter reads one batch of 100 from the middle of a backlog of
// 1k and 100k events: the keyset reader against watermill-sql's default
// OR-shaped select. The keyset cost should not grow with the backlog.
// Run: go test -run '^$' -bench ReadAfter ./outbox/
func BenchmarkReadAfter(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		d := pgtest.New(b)
		mid, perTx := seedBacklog(b, d, n)
		ctx := context.Background()
		b.Run(fmt.Sprintf("keyset/backlog=%d", n), func(b *testing.B) {
			for b.Loop() {
				got, err := outbox.ReadAfter(ctx, d.Q, mid, 100)
				if err != nil || len(got) != 100 {
					b.Fatalf("read %d: %v", len(got), err)
				}
			}
			b.ReportMetric(float64(perTx), "rows/txid")
		})
		b.Run(fmt.Sprintf("or-select/backlog=%d", n), func(b *testing.B) {
			for b.Loop() {
				rows, err := d.Pool.Query(ctx, orSelect)
				if err != nil {
					b.Fatal(err)
				}
				k := 0
				for rows.Next() {
					k++
				}
				if rows.Close(); rows.Err() != nil || k != 100 {
					b.Fatalf("read %d: %v", k, rows.Err())
				}
			}
		})
	}
}
