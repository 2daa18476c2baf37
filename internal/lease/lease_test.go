package lease_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// fencedWrite is the work a lease holder does: a fenced transaction that
// appends one outbox row of type "test.fenced-write".
func fencedWrite(ctx context.Context, t *testing.T, d *pgtest.DB, l lease.Lease) error {
	return pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		if err := l.Fence(ctx, tx); err != nil {
			return err
		}
		_, err := db.New(tx).OutboxAppend(ctx, db.OutboxAppendParams{
			ID: uuid.New(), Type: "test.fenced-write", Subject: l.Owner, Data: json.RawMessage(`{}`),
		})
		return err
	})
}

func countWrites(t *testing.T, d *pgtest.DB, owner string) int {
	var n int
	require.NoError(t, d.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM outbox WHERE type = 'test.fenced-write' AND subject = $1", owner).Scan(&n))
	return n
}

func TestRenewKeepsEpochTakeoverIncrementsIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)

	a, err := lease.Acquire(ctx, d.Q, "singleton:test", "a", lease.TTL)
	require.NoError(t, err)
	require.Equal(t, int64(1), a.Epoch)
	require.Equal(t, pgtest.SimEpoch.Add(lease.TTL), a.ExpiresAt.UTC())

	_, err = lease.Acquire(ctx, d.Q, "singleton:test", "b", lease.TTL)
	require.ErrorIs(t, err, lease.ErrNotAcquired, "a live lease cannot be taken")

	d.AdvanceSimClock(t, lease.RenewEvery)
	a, err = lease.Acquire(ctx, d.Q, "singleton:test", "a", lease.TTL)
	require.NoError(t, err)
	require.Equal(t, int64(1), a.Epoch, "renewal keeps the epoch")

	d.AdvanceSimClock(t, lease.TTL+time.Second)
	b, err := lease.Acquire(ctx, d.Q, "singleton:test", "b", lease.TTL)
	require.NoError(t, err)
	require.Equal(t, int64(2), b.Epoch, "takeover increments the epoch")

	_, err = lease.Acquire(ctx, d.Q, "singleton:test", "a", lease.TTL)
	require.ErrorIs(t, err, lease.ErrNotAcquired, "the old holder cannot renew after a takeover")
}

// A zombie — a holder that paused past its TTL while another process took
// the lease over — must not commit a single fenced write.
func TestZombieHolderCannotCommitFencedWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)

	zombie, err := lease.Acquire(ctx, d.Q, "singleton:outbox-dispatch:test", "zombie", lease.TTL)
	require.NoError(t, err)
	require.NoError(t, fencedWrite(ctx, t, d, zombie))
	require.Equal(t, 1, countWrites(t, d, "zombie"), "a live holder writes")

	d.AdvanceSimClock(t, lease.TTL+time.Second) // the zombie pauses past its TTL
	heir, err := lease.Acquire(ctx, d.Q, "singleton:outbox-dispatch:test", "heir", lease.TTL)
	require.NoError(t, err)

	for range 5 {
		require.ErrorIs(t, fencedWrite(ctx, t, d, zombie), lease.ErrFenced)
	}
	require.Equal(t, 1, countWrites(t, d, "zombie"), "no fenced write of the zombie lands after the takeover")
	require.NoError(t, fencedWrite(ctx, t, d, heir))
	require.Equal(t, 1, countWrites(t, d, "heir"))
}

// An expired lease fences its holder even before anybody takes it over.
func TestExpiredLeaseFences(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	l, err := lease.Acquire(ctx, d.Q, "shard:3", "w", lease.TTL)
	require.NoError(t, err)
	d.AdvanceSimClock(t, lease.TTL)
	require.ErrorIs(t, fencedWrite(ctx, t, d, l), lease.ErrFenced)
	require.Equal(t, 0, countWrites(t, d, "w"))
}

// A takeover waits for the old holder's fenced transaction to end: the
// FOR SHARE row lock, not the check alone, is the fence.
func TestTakeoverWaitsForFencedTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	old, err := lease.Acquire(ctx, d.Q, "singleton:x", "old", lease.TTL)
	require.NoError(t, err)

	tx, err := d.Pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, old.Fence(ctx, tx))
	d.AdvanceSimClock(t, lease.TTL+time.Second)

	took := make(chan lease.Lease, 1)
	go func() {
		l, err := lease.Acquire(ctx, d.Q, "singleton:x", "new", lease.TTL)
		if err == nil {
			took <- l
		}
		close(took)
	}()
	d.WaitForLockWait(t)
	select {
	case <-took:
		t.Fatal("takeover finished while the old holder's fenced transaction was open")
	default:
	}
	_, err = db.New(tx).OutboxAppend(ctx, db.OutboxAppendParams{ID: uuid.New(), Type: "test.fenced-write", Subject: "old", Data: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))

	l, ok := <-took
	require.True(t, ok)
	require.Equal(t, int64(2), l.Epoch)
	require.ErrorIs(t, fencedWrite(ctx, t, d, old), lease.ErrFenced)
}

// A renewal whose caller gives up while the statement waits is seen
// through, not abandoned: abandoned, the server could run it after the
// holder's Release and take the lease back for a whole TTL. Here the
// renewal waits on the lease row's lock, its context is cancelled, and it
// still returns the renewed lease once the lock goes; the Release after it
// then lets another owner in at once.
func TestAcquireCancelledInFlightIsSeenThrough(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	d := pgtest.New(t)
	a, err := lease.Acquire(bg, d.Q, "singleton:settle", "a", lease.TTL)
	require.NoError(t, err)

	blocker, err := d.Pool.Begin(bg)
	require.NoError(t, err)
	_, err = blocker.Exec(bg, "SELECT 1 FROM leases WHERE name = 'singleton:settle' FOR UPDATE")
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(bg)
	type result struct {
		l   lease.Lease
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := lease.Acquire(ctx, d.Q, "singleton:settle", "a", lease.TTL)
		done <- result{l, err}
	}()
	d.WaitForLockWait(t) // the renewal waits on the row lock
	cancel()
	require.NoError(t, blocker.Rollback(bg))
	r := <-done
	require.NoError(t, r.err, "the renewal ran to its end")
	require.Equal(t, a.Epoch, r.l.Epoch)

	require.NoError(t, r.l.Release(bg, d.Q))
	b, err := lease.Acquire(bg, d.Q, "singleton:settle", "b", lease.TTL)
	require.NoError(t, err, "nothing renewed the lease after its release")
	require.Equal(t, a.Epoch+1, b.Epoch)

	_, err = lease.Acquire(ctx, d.Q, "singleton:settle", "a", lease.TTL)
	require.ErrorIs(t, err, context.Canceled, "a context already done sends nothing")
}
