package outbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

// drain runs RunOnce until the recorder holds want distinct events.
func drain(t *testing.T, d *outbox.Dispatcher, r *recorder, want int) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := d.RunOnce(context.Background())
		require.NoError(t, err)
		return len(r.distinct()) >= want
	}, waitFor, time.Millisecond)
}

// Kill a dispatcher mid-batch: d1 delivers a batch and saves it, then hangs
// half-way through its next batch. Its lease expires in simulated time, d2
// takes it over (epoch 2) and resumes at the saved cursor. Every event
// reaches the sink at least once and, deduplicated by id, exactly once and
// in log order; when the zombie d1 wakes up it cannot save its cursor.
func TestDispatcherKilledMidBatchNextHolderResumes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	want := appendEach(t, d, "e", 25)
	log := waitVisible(t, d, 25)

	rec := &recorder{}
	stuck, wake := make(chan struct{}), make(chan struct{})
	calls := 0
	d1 := outbox.NewDispatcher(d.Pool, "d1", funcSink{id: "audit", deliver: func(ctx context.Context, events []outbox.Stored) error {
		calls++
		if calls == 1 {
			rec.add(events...)
			return nil
		}
		rec.add(events[:5]...) // half the batch reaches the sink...
		close(stuck)
		<-wake // ...then the process hangs (GC pause, partition)
		return nil
	}}, nil)
	d1.Batch = 10
	d1.RenewEvery = time.Hour // a hung process renews nothing

	n, err := d1.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 10, n)
	saved, err := outbox.CursorOf(ctx, d.Q, "audit")
	require.NoError(t, err)
	require.Equal(t, log[9].Position, saved)

	zombie := make(chan error, 1)
	go func() {
		_, err := d1.RunOnce(ctx)
		zombie <- err
	}()
	<-stuck

	d.AdvanceSimClock(t, lease.TTL+time.Second)
	d2 := outbox.NewDispatcher(d.Pool, "d2", recordingSink("audit", rec), nil)
	d2.Batch = 10
	drain(t, d2, rec, 25)
	held, err := d.Q.LeaseGet(ctx, outbox.LeaseName("audit"))
	require.NoError(t, err)
	require.Equal(t, "d2", held.Owner)
	require.Equal(t, int64(2), held.Epoch, "takeover increments the epoch")

	close(wake)
	require.ErrorIs(t, <-zombie, lease.ErrFenced, "the zombie cannot save after the takeover")
	saved, err = outbox.CursorOf(ctx, d.Q, "audit")
	require.NoError(t, err)
	require.Equal(t, log[24].Position, saved, "the zombie did not move the cursor back")

	require.Equal(t, want, rec.distinct(), "after dedup: every event exactly once, in order")
	require.Len(t, rec.all(), 30, "the 5 events of the interrupted batch were delivered twice")
	n, err = d1.RunOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "d1 no longer holds the lease")
}

// applyTable is a TxSink that inserts each event id into its own table, and
// fails (after writing) when failOn is in the batch.
type applyTable struct {
	failOn uuid.UUID
}

func (applyTable) ID() string { return "projection" }

func (s applyTable) Apply(ctx context.Context, tx pgx.Tx, events []outbox.Stored) error {
	for _, e := range events {
		if _, err := tx.Exec(ctx, "INSERT INTO applied (id) VALUES ($1)", e.ID); err != nil {
			return err
		}
		if e.ID == s.failOn {
			return errors.New("projection bug")
		}
	}
	return nil
}

// A TxSink's effect and cursor commit together: a failing Apply leaves both
// untouched, and a successful one is never applied twice.
func TestTxSinkExactlyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	_, err := d.Pool.Exec(ctx, "CREATE TABLE applied (id uuid PRIMARY KEY)")
	require.NoError(t, err)
	ids := appendEach(t, d, "p", 6)
	log := waitVisible(t, d, 6)
	count := func() int {
		var n int
		require.NoError(t, d.Pool.QueryRow(ctx, "SELECT count(*) FROM applied").Scan(&n))
		return n
	}

	sink := &applyTable{failOn: ids[3]}
	disp := outbox.NewTxDispatcher(d.Pool, "w1", sink, nil)
	batches := 0
	disp.AfterBatch = func() { batches++ }
	_, err = disp.RunOnce(ctx)
	require.ErrorContains(t, err, "projection bug")
	require.Zero(t, count(), "nothing of the failed batch is applied")
	require.Zero(t, batches, "AfterBatch is not called for a batch that was not saved")
	cur, err := outbox.CursorOf(ctx, d.Q, "projection")
	require.NoError(t, err)
	require.True(t, cur.IsZero(), "the cursor did not move")

	sink.failOn = uuid.Nil
	n, err := disp.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 6, n)
	require.Equal(t, 6, count())
	require.Equal(t, 1, batches, "AfterBatch follows the saved batch")
	cur, err = outbox.CursorOf(ctx, d.Q, "projection")
	require.NoError(t, err)
	require.Equal(t, log[5].Position, cur)

	n, err = disp.RunOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, 6, count(), "applied exactly once")
	require.Equal(t, 1, batches, "nothing new, no AfterBatch")
}

// A sink whose Deliver hangs delays only itself: the other sink's
// dispatcher, in its own goroutine, delivers everything, including events
// appended while the slow one is stuck, woken by the listener's pokes.
func TestSlowSinkDoesNotDelayAnother(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	listener := outbox.NewListener(d.URL, nil)
	pokesA, pokesB := listener.Subscribe(), listener.Subscribe()
	go listener.Run(ctx)

	slowStarted, unblock := make(chan struct{}), make(chan struct{})
	recA, recB := &recorder{}, &recorder{}
	slow := outbox.NewDispatcher(d.Pool, "p1", funcSink{id: "slow", deliver: func(ctx context.Context, events []outbox.Stored) error {
		select {
		case <-slowStarted:
		default:
			close(slowStarted)
		}
		select {
		case <-unblock:
		case <-ctx.Done():
			return ctx.Err()
		}
		recA.add(events...)
		return nil
	}}, nil)
	fast := outbox.NewDispatcher(d.Pool, "p1", recordingSink("fast", recB), nil)
	slow.Batch, fast.Batch = 5, 5

	runs := make(chan struct{}, 2)
	go func() { slow.Run(ctx, time.Second, pokesA); runs <- struct{}{} }()
	go func() { fast.Run(ctx, time.Second, pokesB); runs <- struct{}{} }()

	first := appendEach(t, d, "first", 12)
	<-slowStarted
	require.Eventually(t, func() bool { return len(recB.distinct()) == 12 }, waitFor, time.Millisecond)
	more := appendEach(t, d, "more", 3)
	require.Eventually(t, func() bool { return len(recB.distinct()) == 15 }, waitFor, time.Millisecond,
		"the fast sink keeps up, woken by pokes (poll is 1 s)")
	require.Equal(t, append(first, more...), recB.distinct())
	require.Empty(t, recA.all(), "the slow sink is still stuck in its first batch")

	close(unblock)
	require.Eventually(t, func() bool { return len(recA.distinct()) == 15 }, waitFor, time.Millisecond)
	require.Equal(t, append(first, more...), recA.distinct())

	cancel()
	<-runs
	<-runs
	// Run released both leases on exit: another process takes over at once.
	for _, sink := range []string{"slow", "fast"} {
		l, err := lease.Acquire(context.Background(), d.Q, outbox.LeaseName(sink), "p2", lease.TTL)
		require.NoError(t, err, sink)
		require.Equal(t, int64(2), l.Epoch)
	}
}

// The listener pokes every subscriber once per committed append (folded
// into one pending poke), over a dedicated connection.
func TestListenerPokesAfterCommit(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listener := outbox.NewListener(d.URL, nil)
	a, b := listener.Subscribe(), listener.Subscribe()
	go listener.Run(ctx)

	waitPoke := func(ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(waitFor):
			t.Fatal("no poke")
		}
	}
	waitPoke(a) // the poke every (re)connect sends: the listener is listening
	waitPoke(b)
	appendEach(t, d, "poke", 3)
	waitPoke(a)
	waitPoke(b)
}

// A TxSink's dispatcher writes its lease only every RenewEvery, not at
// every batch: between renewals it reuses the lease it holds, and the
// batch's fence is what checks it. A lease that lapsed meanwhile by the
// database's clock fails that fence, and the same RunOnce takes the lease
// again and applies the batch: no error, nothing lost, nothing twice.
func TestTxDispatcherReusesItsLeaseUntilItLapses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	_, err := d.Pool.Exec(ctx, "CREATE TABLE applied (id uuid PRIMARY KEY)")
	require.NoError(t, err)
	expires := func() time.Time {
		t.Helper()
		l, err := d.Q.LeaseGet(ctx, outbox.LeaseName("projection"))
		require.NoError(t, err)
		return l.ExpiresAt
	}
	disp := outbox.NewTxDispatcher(d.Pool, "w1", &applyTable{}, nil)
	disp.RenewEvery = time.Hour // real time: no renewal falls due during the test

	appendEach(t, d, "a", 2)
	waitVisible(t, d, 2)
	n, err := disp.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	first := expires()

	d.AdvanceSimClock(t, time.Second)
	appendEach(t, d, "b", 2)
	waitVisible(t, d, 4)
	n, err = disp.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, first, expires(), "the second batch ran on the held lease, without renewing it")

	d.AdvanceSimClock(t, lease.TTL+time.Second) // the held lease lapses by the database's clock
	appendEach(t, d, "c", 2)
	waitVisible(t, d, 6)
	n, err = disp.RunOnce(ctx)
	require.NoError(t, err, "a lapsed lease is taken again within the same RunOnce")
	require.Equal(t, 2, n)
	require.True(t, expires().After(first), "the lease was renewed")
	var applied int
	require.NoError(t, d.Pool.QueryRow(ctx, "SELECT count(*) FROM applied").Scan(&applied))
	require.Equal(t, 6, applied, "every event applied exactly once")
}

// A TxSink's dispatcher keeps the cursor it saved while it holds the lease,
// and reads it again once it has to take the lease afresh: here another
// process took over meanwhile and moved the cursor, and the first one
// resumes after it (a stale cursor would apply the other's events twice:
// applied's primary key refuses that).
func TestTxDispatcherReadsTheCursorAgainAfterATakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	_, err := d.Pool.Exec(ctx, "CREATE TABLE applied (id uuid PRIMARY KEY)")
	require.NoError(t, err)
	w1 := outbox.NewTxDispatcher(d.Pool, "w1", &applyTable{}, nil)
	w2 := outbox.NewTxDispatcher(d.Pool, "w2", &applyTable{}, nil)
	w1.RenewEvery, w2.RenewEvery = time.Hour, time.Hour

	appendEach(t, d, "a", 2)
	waitVisible(t, d, 2)
	n, err := w1.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)

	d.AdvanceSimClock(t, lease.TTL+time.Second) // w1's lease lapses; w2 takes over
	appendEach(t, d, "b", 2)
	waitVisible(t, d, 4)
	n, err = w2.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n, "w2 resumes after w1's saved cursor")

	d.AdvanceSimClock(t, lease.TTL+time.Second) // and w1 takes it back
	appendEach(t, d, "c", 2)
	waitVisible(t, d, 6)
	n, err = w1.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n, "w1 resumes after w2's cursor, not its own")
	var applied int
	require.NoError(t, d.Pool.QueryRow(ctx, "SELECT count(*) FROM applied").Scan(&applied))
	require.Equal(t, 6, applied)
}

// settingSink is a TxSink that records synchronous_commit as its
// transaction sees it.
type settingSink struct{ seen []string }

func (*settingSink) ID() string { return "setting" }

func (s *settingSink) Apply(ctx context.Context, tx pgx.Tx, _ []outbox.Stored) error {
	var v string
	if err := tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&v); err != nil {
		return err
	}
	s.seen = append(s.seen, v)
	return nil
}

// A TxSink's transaction commits without waiting for the WAL flush (its
// effects are replayed from the outbox if a crash loses them), and only
// it: the setting does not outlive the transaction on the pooled
// connection, which a command may use next.
func TestTxSinkCommitsAsynchronouslyAndOnlyItself(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	// One connection whose sessions commit synchronously (the test
	// cluster's default is off).
	cfg, err := pgxpool.ParseConfig(d.URL)
	require.NoError(t, err)
	cfg.MaxConns = 1
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	defer pool.Close()

	appendEach(t, d, "s", 2)
	waitVisible(t, d, 2)
	sink := &settingSink{}
	n, err := outbox.NewTxDispatcher(pool, "w1", sink, nil).RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, []string{"off"}, sink.seen)

	var v string
	require.NoError(t, pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&v))
	require.Equal(t, "on", v, "the same connection, after the batch")
}
