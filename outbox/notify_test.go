package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
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
// the marker. The marker is sent once the pool's notifier is idle, so every
// notification announcing the commits under test has been committed before
// it, and NOTIFY delivers in commit order: nothing is waited for by time.
func pokesBeforeMarker(t *testing.T, d *pgtest.DB, conn *pgx.Conn) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, outbox.InstallNotifier(d.Pool, nil, nil).Wait(ctx))
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

// A transaction appending 100 events, one statement each, is announced by
// one notification, sent by the pool's notifier after the commit; one
// appending in a rolled-back savepoint and again after it by exactly one;
// a rolled-back transaction by none.
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

// A committed append wakes a session LISTENing elsewhere and, at once and
// without the database, the subscribers of this process's listener; a
// rolled-back one wakes neither.
func TestCommittedAppendWakesListeners(t *testing.T) {
	t.Parallel()
	if os.Getenv("PGTEST_ADMIN_URL") != "" {
		t.Skip("through PgBouncer in transaction mode: no LISTEN, pokes are off and loops poll")
	}
	d := pgtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	conn := listenConn(t, d)
	// Not Run: its subscribers hear only the in-process poke.
	local := outbox.NewListener(d.URL, nil)
	pokes := local.Subscribe()
	outbox.InstallNotifier(d.Pool, local, nil)

	appendEach(t, d, "woken", 1)
	select {
	case <-pokes:
	default:
		t.Fatal("the commit returned before the in-process subscriber was poked")
	}
	_, err := conn.WaitForNotification(ctx)
	require.NoError(t, err, "the other session was not notified")

	tx, err := d.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = outbox.Append(ctx, db.New(tx), newEvent(t, "rolled-back"))
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	select {
	case <-pokes:
		t.Fatal("a rolled-back append poked the in-process subscriber")
	default:
	}
	require.Zero(t, pokesBeforeMarker(t, d, conn), "a rolled-back append notified")
}

// 1,000 appends committed by 8 writers are announced by far fewer
// notifications than commits, but by some. That the last commit is always
// followed by a notification, wherever it lands in the notifier's cycle,
// is TestNotifierNeverLosesTheLastCommit.
func TestNotificationsCoalesced(t *testing.T) {
	t.Parallel()
	if os.Getenv("PGTEST_ADMIN_URL") != "" {
		t.Skip("through PgBouncer in transaction mode: no LISTEN, pokes are off and loops poll")
	}
	d := pgtest.New(t)
	conn := listenConn(t, d)
	const writers, each = 8, 125
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() { appendEach(t, d, fmt.Sprintf("w%d", w), each) })
	}
	wg.Wait()
	n := pokesBeforeMarker(t, d, conn)
	t.Logf("%d commits, %d notifications", writers*each, n)
	require.GreaterOrEqual(t, n, 1)
	require.Less(t, n, writers*each/4, "coalesced: far fewer notifications than commits")
}

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
