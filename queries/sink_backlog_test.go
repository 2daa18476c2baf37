package queries_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/queries"
)

// What the command admission follows: the log's visible head and the
// slowest working sink's cursor, of the sinks asked about (sinks that
// stopped are left out), and the oldest webhook delivery waiting for a
// worker (not while no worker runs one, nor behind a slow attempt).
func TestSinkBacklog(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := t.Context()
	q := queries.New(d.Pool)
	var visible outbox.Position // the last event appended: read until the head shows it
	backlog := func() queries.Backlog {
		t.Helper()
		var b queries.Backlog
		// The frontier is cluster-wide: another test's open transaction
		// may hold the event below it for a moment, hence the polling.
		require.Eventually(t, func() bool {
			var err error
			b, err = q.SinkBacklog(ctx, queries.BacklogQuery{Sinks: []string{"fast", "slow"}, Active: 10 * time.Second,
				DeliveryKind: "webhook.deliver", SlotHold: 30 * time.Second, SlowAttempt: time.Second})
			require.NoError(t, err)
			return !b.Head.Less(visible)
		}, waitFor, 2*time.Millisecond)
		return b
	}
	require.Equal(t, queries.Backlog{}, backlog(), "nothing in a fresh database")

	appendEvent := func() outbox.Position {
		t.Helper()
		row, err := d.Q.OutboxAppend(ctx, db.OutboxAppendParams{ID: uuid.New(), Type: "test.happened", Subject: "s", Data: []byte(`{}`)})
		require.NoError(t, err)
		visible = outbox.Position{TxID: row.Txid, Seq: row.Seq}
		return visible
	}
	first := appendEvent()
	require.NoError(t, d.Q.OutboxCursorSave(ctx, db.OutboxCursorSaveParams{Sink: "fast", Txid: first.TxID, Seq: first.Seq}))
	require.NoError(t, d.Q.OutboxCursorSave(ctx, db.OutboxCursorSaveParams{Sink: "other"}))
	second := appendEvent()
	require.Equal(t, queries.Backlog{Head: second, Slowest: first, HasSlowest: true}, backlog(),
		"a sink not asked about is left out, however far behind")
	require.NoError(t, d.Q.OutboxCursorSave(ctx, db.OutboxCursorSaveParams{Sink: "slow"}))
	require.Equal(t, queries.Backlog{Head: second, HasSlowest: true}, backlog(), "the slow sink is the slowest")

	// The slow sink stops: 10 s after its last save it no longer counts; nor,
	// 10 s after its own, does the fast one.
	d.AdvanceSimClock(t, 6*time.Second)
	require.NoError(t, d.Q.OutboxCursorSave(ctx, db.OutboxCursorSaveParams{Sink: "fast", Txid: second.TxID, Seq: second.Seq}))
	d.AdvanceSimClock(t, 5*time.Second)
	require.Equal(t, queries.Backlog{Head: second, Slowest: second, HasSlowest: true}, backlog())
	d.AdvanceSimClock(t, 6*time.Second)
	require.Equal(t, queries.Backlog{Head: second}, backlog(), "no sink works")

	// A delivery due 2 s ago waits while no worker runs one: not counted.
	_, err := d.Pool.Exec(ctx, `INSERT INTO work_queue (kind, key, shard, not_before)
		VALUES ('webhook.deliver', 'd1', 0, compute_now() - interval '2 seconds'),
		       ('webhook.deliver', 'd2', 0, compute_now() - interval '5 seconds'),
		       ('other.kind', 'o1', 0, compute_now() - interval '9 seconds')`)
	require.NoError(t, err)
	require.Equal(t, queries.Backlog{Head: second}, backlog())
	// A worker runs d2: d1 waits for one, 2 s; the other kind is not asked about.
	_, err = d.Pool.Exec(ctx, `UPDATE work_queue SET claimed_by = 'w', claimed_until = compute_now() + interval '1 minute'
		WHERE key = 'd2'`)
	require.NoError(t, err)
	require.Equal(t, queries.Backlog{Head: second, DeliveryWait: 2 * time.Second}, backlog())

	// An attempt in flight since half a second: still counted; once it has
	// run for more than a second, the wait may be behind its receiver.
	for _, stmt := range []string{
		`INSERT INTO tenants (id) VALUES ('acme')`,
		`INSERT INTO webhook_endpoints (id, tenant_id, url, secret) VALUES ('we1', 'acme', 'https://hooks.example/', 'whsec_x')`,
		`INSERT INTO webhook_deliveries (endpoint_id, event_id) SELECT 'we1', o.id FROM outbox o LIMIT 1`,
		`INSERT INTO webhook_inflight (delivery_id, endpoint_id, tenant_id, until)
		 SELECT id, endpoint_id, 'acme', compute_now() + interval '29.5 seconds' FROM webhook_deliveries`,
	} {
		_, err = d.Pool.Exec(ctx, stmt)
		require.NoError(t, err)
	}
	require.Equal(t, queries.Backlog{Head: second, DeliveryWait: 2 * time.Second}, backlog())
	d.AdvanceSimClock(t, time.Second)
	require.Equal(t, queries.Backlog{Head: second}, backlog(), "an attempt is slow")
}
