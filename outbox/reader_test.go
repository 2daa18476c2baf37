package outbox_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

// Late commit: A takes its txid first, B appends and commits while A is
// still open, then A appends again (a higher seq than B's) and commits. The
// reader must not hand out B before A (a cursor past B would skip A for
// ever), must then return A's rows before B's in (txid, seq) order, and
// must never return a rolled-back row.
func TestReadAfterLateCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)

	txA, err := d.Pool.Begin(ctx)
	require.NoError(t, err)
	defer txA.Rollback(ctx)
	a1 := newEvent(t, "a1")
	_, err = outbox.Append(ctx, db.New(txA), a1)
	require.NoError(t, err)

	b1 := newEvent(t, "b1")
	require.NoError(t, pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		_, err := outbox.Append(ctx, db.New(tx), b1)
		return err
	}))
	a2 := newEvent(t, "a2")
	posA2, err := outbox.Append(ctx, db.New(txA), a2)
	require.NoError(t, err)

	rolled := newEvent(t, "rolled-back")
	txR, err := d.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = outbox.Append(ctx, db.New(txR), rolled)
	require.NoError(t, err)
	require.NoError(t, txR.Rollback(ctx))

	got, err := outbox.ReadAfter(ctx, d.Q, outbox.Position{}, 100)
	require.NoError(t, err)
	require.Empty(t, got, "B committed behind A's xmin: it must stay invisible while A is open")

	require.NoError(t, txA.Commit(ctx))
	got = waitVisible(t, d, 3)
	require.Equal(t, []uuid.UUID{a1.ID, a2.ID, b1.ID}, idsOf(got), "A's rows (lower txid) come first, then B; nothing rolled back")
	require.Equal(t, posA2, got[1].Position)
	require.True(t, got[1].Position.Less(got[2].Position))
	require.Greater(t, got[2].Position.Seq, int64(0))
	require.Less(t, got[2].Position.Seq, got[1].Position.Seq, "commit order is not seq order: B's seq is lower than a2's")
	require.Equal(t, "t1", got[0].TenantID)
	require.JSONEq(t, `{"subject":"a1"}`, string(got[0].Data))

	rest, err := outbox.ReadAfter(ctx, d.Q, got[0].Position, 100)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{a2.ID, b1.ID}, idsOf(rest), "strictly after the cursor")
	rest, err = outbox.ReadAfter(ctx, d.Q, got[2].Position, 100)
	require.NoError(t, err)
	require.Empty(t, rest)
}

// An append in a transaction that rolls back leaves nothing behind.
func TestAppendRolledBackLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	e := newEvent(t, "never")
	errAbort := errors.New("abort")
	err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		if _, err := outbox.Append(ctx, db.New(tx), e); err != nil {
			return err
		}
		return errAbort
	})
	require.ErrorIs(t, err, errAbort)

	_, err = d.Q.OutboxGet(ctx, e.ID)
	require.ErrorIs(t, err, pgx.ErrNoRows)
	kept := appendEach(t, d, "kept", 1)
	got := waitVisible(t, d, 1)
	require.Equal(t, kept, idsOf(got), "only the committed event is read")
}

func TestReadAfterRejectsNonPositiveLimit(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	_, err := outbox.ReadAfter(context.Background(), d.Q, outbox.Position{}, 0)
	require.Error(t, err)
}

// Cursors round-trip through their opaque string form, and sort as strings
// exactly as the reader orders positions.
func TestPositionCursorRoundTripAndOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	appendEach(t, d, "p", 5)
	require.NoError(t, pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		_, err := outbox.Append(ctx, db.New(tx), newEvent(t, "x1"), newEvent(t, "x2"))
		return err
	}))
	read := waitVisible(t, d, 7)

	positions := []outbox.Position{{}, {TxID: 1, Seq: 1}, {TxID: 1 << 32, Seq: 2}, {TxID: 1<<63 + 5, Seq: 1<<62 + 1}}
	for _, e := range read {
		positions = append(positions, e.Position)
	}
	for _, p := range positions {
		back, err := outbox.ParsePosition(p.String())
		require.NoError(t, err)
		require.Equal(t, p, back)
	}
	empty, err := outbox.ParsePosition("")
	require.NoError(t, err)
	require.True(t, empty.IsZero())
	for _, bad := range []string{"xyz", "0000000000000001000000000000000g", "00000000000000010000000000000001ff", "0000000000000001ffffffffffffffff"} {
		_, err := outbox.ParsePosition(bad)
		require.Error(t, err, bad)
	}

	for i := 1; i < len(read); i++ {
		prev, cur := read[i-1].Position, read[i].Position
		require.True(t, prev.Less(cur), "reader order is (txid, seq) order")
		require.Less(t, prev.String(), cur.String(), "cursor strings sort as the reader does")
	}
	byString := slices.Clone(positions)
	slices.SortFunc(byString, func(a, b outbox.Position) int { return compareStrings(a.String(), b.String()) })
	byLess := slices.Clone(positions)
	slices.SortFunc(byLess, func(a, b outbox.Position) int {
		switch {
		case a.Less(b):
			return -1
		case b.Less(a):
			return 1
		}
		return 0
	})
	require.Equal(t, byLess, byString)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// A transaction with an xid left open shows up as frontier lag, with its
// session named, so /readyz can say who is holding the outbox back.
func TestFrontierLagNamesOldestTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)

	tx, err := d.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = outbox.Append(ctx, db.New(tx), newEvent(t, "held"))
	require.NoError(t, err)
	appendEach(t, d, "after", 2) // two xids assigned after the holder's

	var start time.Time
	require.NoError(t, tx.QueryRow(ctx, "SELECT xact_start FROM pg_stat_activity WHERE pid = pg_backend_pid()").Scan(&start))
	lag, err := outbox.ReadFrontierLag(ctx, d.Q, func() time.Time { return start.Add(time.Hour) })
	require.NoError(t, err)
	require.GreaterOrEqual(t, lag.XidsBehind, int64(3), "the holder's xid and the two after it are behind the frontier")
	require.GreaterOrEqual(t, lag.Age, time.Hour, "the oldest transaction is at least as old as ours")
	require.NotEmpty(t, lag.Holder)
}
