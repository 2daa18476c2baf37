package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

// listenConn is a session LISTENing on the outbox channel.
func listenConn(t *testing.T, d *pgtest.DB) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d.URL)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	require.NoError(t, db.New(conn).OutboxListen(ctx))
	return conn
}

// pokesBeforeMarker counts the outbox notifications conn receives before
// the marker, sent by a transaction that committed after the ones under
// test: NOTIFY delivers in commit order, so nothing is waited for by time.
func pokesBeforeMarker(t *testing.T, d *pgtest.DB, conn *pgx.Conn) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	_, err := d.Pool.Exec(ctx, "SELECT pg_notify($1, 'marker')", outbox.NotifyChannel)
	require.NoError(t, err)
	n := 0
	for {
		var note *pgconn.Notification
		note, err = conn.WaitForNotification(ctx)
		require.NoError(t, err)
		if note.Payload == "marker" {
			return n
		}
		n++
	}
}

// A transaction appending 100 events, one statement each, delivers one
// notification (the trigger of migration 0010 notifies per statement with
// an empty payload, and PostgreSQL folds identical notifications of a
// transaction into one at commit); one appending in a rolled-back savepoint
// and again after it delivers exactly one; a rolled-back transaction none.
func TestOneNotificationPerTransaction(t *testing.T) {
	t.Parallel()
	if os.Getenv("PGTEST_ADMIN_URL") != "" {
		t.Skip("through PgBouncer in transaction mode: no LISTEN, pokes are off and loops poll")
	}
	d := pgtest.New(t)
	ctx := context.Background()
	conn := listenConn(t, d)

	require.NoError(t, pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		for i := range 100 {
			if _, err := outbox.Append(ctx, q, newEvent(t, fmt.Sprintf("many-%d", i))); err != nil {
				return err
			}
		}
		return nil
	}))
	require.Equal(t, 1, pokesBeforeMarker(t, d, conn), "100 appends, one commit, one notification")

	require.NoError(t, pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		require.ErrorIs(t, pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
			if _, err := outbox.Append(ctx, db.New(sp), newEvent(t, "undone")); err != nil {
				return err
			}
			return errRollback
		}), errRollback)
		_, err := outbox.Append(ctx, db.New(tx), newEvent(t, "kept"))
		return err
	}))
	require.Equal(t, 1, pokesBeforeMarker(t, d, conn), "one notification for the transaction, savepoint or not")

	tx, err := d.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = outbox.Append(ctx, db.New(tx), newEvent(t, "rolled-back"))
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	require.Zero(t, pokesBeforeMarker(t, d, conn), "no notification for a rolled-back transaction")
}

var errRollback = errors.New("roll back")

// A dispatcher whose poll interval is an hour still delivers a committed
// event promptly: the listener's poke wakes it. The outbox frontier is
// cluster-wide, so a transaction another test package holds open may hide
// the event when the poke arrives; each further append pokes again, so the
// test appends until the event is seen, and never relies on the poll.
func TestPokeWakesDispatcherWithoutPolling(t *testing.T) {
	t.Parallel()
	if os.Getenv("PGTEST_ADMIN_URL") != "" {
		t.Skip("through PgBouncer in transaction mode: no LISTEN, pokes are off and loops poll")
	}
	d := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listener := outbox.NewListener(d.URL, nil)
	pokes := listener.Subscribe()
	go listener.Run(ctx)

	seen := make(chan outbox.Stored, 1024)
	disp := outbox.NewDispatcher(d.Pool, "p1", funcSink{id: "woken", deliver: func(_ context.Context, events []outbox.Stored) error {
		for _, e := range events {
			seen <- e
		}
		return nil
	}}, nil)
	// An event committed before the dispatcher starts: once the sink has it,
	// the dispatcher's first pass is over, and with an hour's poll only a
	// poke can make it read again.
	first := appendEach(t, d, "first", 1)[0]
	done := make(chan struct{})
	go func() { disp.Run(ctx, time.Hour, pokes); close(done) }()
	defer func() { cancel(); <-done }()

	deadline := time.After(waitFor) // a failure guard, not a measurement
	await := func(want uuid.UUID) {
		t.Helper()
		// A transaction held open elsewhere (the frontier is cluster-wide)
		// can hide want when its poke arrives: keep poking, by appending.
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case e := <-seen:
				if e.ID == want {
					return
				}
			case <-tick.C:
				appendEach(t, d, "filler", 1)
			case <-deadline:
				t.Fatal("the event did not reach the sink: no poke woke the dispatcher")
			}
		}
	}
	await(first)
	await(appendEach(t, d, "woken", 1)[0])
}
