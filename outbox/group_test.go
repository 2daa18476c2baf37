package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

// tableSink is a TxSink that inserts each event id, with the id of the
// transaction that applied it, into a table of its own (its ID), and
// fails, after writing, on failOn.
type tableSink struct {
	id     string
	failOn uuid.UUID
}

func (s *tableSink) ID() string { return s.id }

func (s *tableSink) Apply(ctx context.Context, tx pgx.Tx, events []outbox.Stored) error {
	for _, e := range events {
		if _, err := tx.Exec(ctx, fmt.Sprintf("INSERT INTO %s (id, tx) VALUES ($1, txid_current())", s.id), e.ID); err != nil {
			return err
		}
		if e.ID == s.failOn {
			return errors.New("projection bug")
		}
	}
	return nil
}

// newTableSinks creates a table for each id and returns its sink.
func newTableSinks(t *testing.T, d *pgtest.DB, ids ...string) []*tableSink {
	t.Helper()
	var out []*tableSink
	for _, id := range ids {
		_, err := d.Pool.Exec(context.Background(), fmt.Sprintf("CREATE TABLE %s (id uuid PRIMARY KEY, tx bigint NOT NULL)", id))
		require.NoError(t, err)
		out = append(out, &tableSink{id: id})
	}
	return out
}

func txSinks(sinks []*tableSink) []outbox.TxSink {
	out := make([]outbox.TxSink, len(sinks))
	for i, s := range sinks {
		out[i] = s
	}
	return out
}

// appliedTo is what sink's table holds, in id order of application, and
// how many transactions wrote it.
func appliedTo(t *testing.T, d *pgtest.DB, sink string) (ids []uuid.UUID, txs map[int64]bool) {
	t.Helper()
	rows, err := d.Pool.Query(context.Background(), fmt.Sprintf("SELECT id, tx FROM %s", sink))
	require.NoError(t, err)
	txs = map[int64]bool{}
	for rows.Next() {
		var id uuid.UUID
		var tx int64
		require.NoError(t, rows.Scan(&id, &tx))
		ids, txs[tx] = append(ids, id), true
	}
	require.NoError(t, rows.Err())
	return ids, txs
}

// A group applies each batch to all its sinks in one transaction, each
// saving its own cursor: every sink's effect exactly once.
func TestTxGroupAppliesABatchToEverySinkInOneTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	sinks := newTableSinks(t, d, "ga", "gb", "gc")
	ids := appendEach(t, d, "g", 7)
	log := waitVisible(t, d, 7)

	group := outbox.NewTxGroup(d.Pool, "w1", txSinks(sinks), nil)
	require.Equal(t, "ga+gb+gc", group.SinkID())
	n, err := group.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 7, n)
	var txOfAll []int64
	for _, s := range sinks {
		got, txs := appliedTo(t, d, s.id)
		require.ElementsMatch(t, ids, got, s.id)
		require.Len(t, txs, 1, "one transaction per sink")
		for tx := range txs {
			txOfAll = append(txOfAll, tx)
		}
		cur, err := outbox.CursorOf(ctx, d.Q, s.id)
		require.NoError(t, err)
		require.Equal(t, log[6].Position, cur, "each sink's own cursor")
	}
	require.Equal(t, txOfAll[0], txOfAll[1])
	require.Equal(t, txOfAll[0], txOfAll[2], "the same transaction for the group")

	n, err = group.RunOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing new")
}

// A sink whose lease another process holds (a rebuild, or a dispatcher
// elsewhere) is left out while the others go on; once the group takes its
// lease it catches up alone to the others' cursor, then joins them.
func TestTxGroupSkipsASinkItHasNoLeaseForAndLetsItCatchUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	sinks := newTableSinks(t, d, "ha", "hb")
	other, err := lease.Acquire(ctx, d.Q, outbox.LeaseName("hb"), "elsewhere", lease.TTL)
	require.NoError(t, err)

	first := appendEach(t, d, "first", 5)
	waitVisible(t, d, 5)
	group := outbox.NewTxGroup(d.Pool, "w1", txSinks(sinks), nil)
	group.Batch = 3
	drainGroup(t, group)
	got, _ := appliedTo(t, d, "ha")
	require.ElementsMatch(t, first, got)
	got, _ = appliedTo(t, d, "hb")
	require.Empty(t, got, "hb's lease is held elsewhere")

	require.NoError(t, other.Release(ctx, d.Q))
	more := appendEach(t, d, "more", 4)
	log := waitVisible(t, d, 9)
	drainGroup(t, group)
	for _, id := range []string{"ha", "hb"} {
		got, _ := appliedTo(t, d, id)
		require.ElementsMatch(t, append(first, more...), got, id)
		cur, err := outbox.CursorOf(ctx, d.Q, id)
		require.NoError(t, err)
		require.Equal(t, log[8].Position, cur, id)
	}

	// Caught up, they share a transaction again.
	last := appendEach(t, d, "last", 2)
	waitVisible(t, d, 11)
	drainGroup(t, group)
	_, txsA := appliedTo(t, d, "ha")
	_, txsB := appliedTo(t, d, "hb")
	var common int
	for tx := range txsA {
		if txsB[tx] {
			common++
		}
	}
	require.Positive(t, common, "a batch of %v went to both in one transaction", last)
}

// A sink whose Apply fails holds back only itself: the others' batch is
// applied without it, it retries alone, and once it succeeds it has every
// event exactly once.
func TestTxGroupFailingSinkHoldsBackOnlyItself(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	sinks := newTableSinks(t, d, "fa", "fb")
	ids := appendEach(t, d, "f", 6)
	log := waitVisible(t, d, 6)
	sinks[1].failOn = ids[2]

	group := outbox.NewTxGroup(d.Pool, "w1", txSinks(sinks), nil)
	_, err := group.RunOnce(ctx)
	require.ErrorContains(t, err, "apply sink fb")
	got, _ := appliedTo(t, d, "fa")
	require.Empty(t, got, "the failed transaction applied nothing")

	_, err = group.RunOnce(ctx)
	require.ErrorContains(t, err, "apply sink fb", "fb fails alone")
	got, _ = appliedTo(t, d, "fa")
	require.ElementsMatch(t, ids, got, "fa went on without fb")
	got, _ = appliedTo(t, d, "fb")
	require.Empty(t, got)
	cur, err := outbox.CursorOf(ctx, d.Q, "fb")
	require.NoError(t, err)
	require.True(t, cur.IsZero(), "fb's cursor did not move")

	sinks[1].failOn = uuid.Nil
	_, err = group.RunOnce(ctx)
	require.NoError(t, err)
	for _, id := range []string{"fa", "fb"} {
		got, _ := appliedTo(t, d, id)
		require.ElementsMatch(t, ids, got, id)
		cur, err := outbox.CursorOf(ctx, d.Q, id)
		require.NoError(t, err)
		require.Equal(t, log[5].Position, cur, id)
	}
}

// drainGroup runs the group until a RunOnce finds nothing new.
func drainGroup(t *testing.T, group *outbox.Dispatcher) {
	t.Helper()
	for range 100 {
		n, err := group.RunOnce(context.Background())
		require.NoError(t, err)
		if n == 0 {
			return
		}
	}
	t.Fatal("the group did not drain")
}

// Two processes' groups, one holding the leases and fencing them in every
// batch while the other tries to take them at every run, wait for each
// other and never deadlock, whatever order each lists its sinks in: the
// fences lock the lease rows in the order lease.AcquireMany does.
func TestTxGroupsOfTwoProcessesDoNotDeadlock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	sinks := newTableSinks(t, d, "dc", "da", "db")
	holder := outbox.NewTxGroup(d.Pool, "w1", txSinks(sinks), nil)
	standby := outbox.NewTxGroup(d.Pool, "w2", txSinks([]*tableSink{sinks[2], sinks[1], sinks[0]}), nil)
	holder.RenewEvery, standby.RenewEvery = 0, 0 // every run writes its leases
	holder.Batch = 1
	_, err := holder.RunOnce(ctx)
	require.NoError(t, err)

	done := make(chan struct{})
	errs := make(chan error, 2)
	for _, g := range []*outbox.Dispatcher{holder, standby} {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, err := g.RunOnce(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	appendEach(t, d, "d", 200)
	waitVisible(t, d, 200)
	close(done)
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	var deadlocks int64
	require.NoError(t, d.Pool.QueryRow(ctx,
		"SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").Scan(&deadlocks))
	require.Zero(t, deadlocks)
}
