package queries_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/queries"
)

// The backlog the command admission follows: a working sink's oldest
// unhandled event and the oldest webhook delivery waiting for a worker,
// each left out when what would handle it has stopped.
func TestSinkBacklog(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := t.Context()
	q := queries.New(d.Pool)
	backlog := func() queries.Backlog {
		t.Helper()
		b, err := q.SinkBacklog(ctx, "webhook.deliver", 10*time.Second)
		require.NoError(t, err)
		return b
	}
	require.Equal(t, queries.Backlog{}, backlog(), "nothing waits in a fresh database")

	// A sink that saved its cursor now, then an event after it that is 3 s old.
	require.NoError(t, d.Q.OutboxCursorSave(ctx, db.OutboxCursorSaveParams{Sink: "projection:test"}))
	_, err := d.Q.OutboxAppend(ctx, db.OutboxAppendParams{ID: uuid.New(), Type: "test.happened", Subject: "s", Data: []byte(`{}`)})
	require.NoError(t, err)
	d.AdvanceSimClock(t, 3*time.Second)
	require.Equal(t, queries.Backlog{SinkLag: 3 * time.Second}, backlog())

	// The sink stops: 10 s after its last save, its backlog no longer counts.
	d.AdvanceSimClock(t, 8*time.Second)
	require.Equal(t, queries.Backlog{}, backlog())

	// A delivery due 2 s ago waits while no worker runs one: not counted.
	_, err = d.Pool.Exec(ctx, `INSERT INTO work_queue (kind, key, shard, not_before)
		VALUES ('webhook.deliver', 'd1', 0, compute_now() - interval '2 seconds'),
		       ('webhook.deliver', 'd2', 0, compute_now() - interval '5 seconds'),
		       ('other.kind', 'o1', 0, compute_now() - interval '9 seconds')`)
	require.NoError(t, err)
	require.Equal(t, queries.Backlog{}, backlog())
	// A worker runs d2: d1 waits for one, 2 s; the other kind is not asked about.
	_, err = d.Pool.Exec(ctx, `UPDATE work_queue SET claimed_by = 'w', claimed_until = compute_now() + interval '1 minute'
		WHERE key = 'd2'`)
	require.NoError(t, err)
	require.Equal(t, queries.Backlog{DeliveryWait: 2 * time.Second}, backlog())
}
