package projections

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// RebuildBatch is how many events one rebuild transaction applies.
const RebuildBatch = 500

// RebuildResult says what a rebuild replayed.
type RebuildResult struct {
	// Events is how many events of the log were replayed.
	Events int
	// Position is where the replay stopped; the projection's cursor was set
	// there, and its dispatcher resumes after it.
	Position outbox.Position
}

// Rebuild replays the whole log into fresh copies of projection name's
// tables and swaps them in, for `compute projections rebuild NAME`. A
// projection that is a Seeder first fills the copies from the write model,
// in the transaction that creates them, and the replay then applies only
// what is newer: so its rebuild lacks nothing that retention pruned from
// the log (docs/concepts/retention.md).
//
// It first takes the projection's dispatch lease
// (singleton:outbox-dispatch:<name>), from a live holder if need be: the
// epoch moves on, so the live dispatcher's next fenced transaction fails and
// it idles (ErrNotAcquired) while the rebuild runs; the takeover waits for a
// batch in flight to commit. The replay then fills empty copies of the
// tables in schema rm_rebuild, one fenced transaction per batch, so no
// transaction stays open for long and the outbox frontier is never held
// back. Readers keep seeing the old tables until the last transaction
// replaces them with the copies and sets the cursor to where the replay
// stopped, atomically. Finally the lease is released and the dispatcher
// takes it back and resumes from that cursor.
//
// The live tables are not updated while a rebuild runs (minPosition waits
// on this projection may time out meanwhile). A rebuild that fails leaves
// the live tables and cursor as they were.
func Rebuild(ctx context.Context, pool *pgxpool.Pool, name string) (RebuildResult, error) {
	p, err := ByName(name)
	if err != nil {
		return RebuildResult{}, err
	}
	l, err := takeLease(ctx, db.New(pool), outbox.LeaseName(name), "rebuild:"+uuid.NewString())
	if err != nil {
		return RebuildResult{}, fmt.Errorf("rebuild %s: %w", name, err)
	}
	defer func() {
		rctx := context.WithoutCancel(ctx)
		_ = l.Release(rctx, db.New(pool)) // on failure the lease simply expires
	}()

	res, err := replay(ctx, pool, p, l)
	if err != nil {
		return RebuildResult{}, fmt.Errorf("rebuild %s: %w", name, err)
	}
	return res, nil
}

// takeLease takes the lease whoever holds it (see Rebuild).
func takeLease(ctx context.Context, q *db.Queries, name, owner string) (lease.Lease, error) {
	row, err := q.RmRebuildTakeLease(ctx, db.RmRebuildTakeLeaseParams{Name: name, Owner: owner,
		TtlSeconds: lease.TTL.Seconds()})
	if err != nil {
		return lease.Lease{}, fmt.Errorf("take lease %s: %w", name, err)
	}
	return lease.Lease{Name: name, Owner: owner, Epoch: row.Epoch, ExpiresAt: row.ExpiresAt, DBNow: row.DbNow}, nil
}

func replay(ctx context.Context, pool *pgxpool.Pool, p Projection, l lease.Lease) (RebuildResult, error) {
	fenced := func(fn func(q *db.Queries, tx pgx.Tx) error) error {
		// Renew before each transaction: a long replay outlives the TTL.
		if _, err := lease.Acquire(ctx, db.New(pool), l.Name, l.Owner, lease.TTL); err != nil {
			if errors.Is(err, lease.ErrNotAcquired) {
				return lease.ErrFenced
			}
			return err
		}
		return pg.InTx(ctx, pool, func(tx pgx.Tx) error {
			if err := l.Fence(ctx, tx); err != nil {
				return err
			}
			return fn(db.New(tx), tx)
		})
	}
	if err := fenced(func(q *db.Queries, tx pgx.Tx) error {
		if err := q.RmRebuildPrepare(ctx, p.Tables()); err != nil {
			return err
		}
		s, ok := p.(Seeder)
		if !ok {
			return nil
		}
		if err := q.RmRebuildUseShadow(ctx); err != nil {
			return fmt.Errorf("switch to fresh tables: %w", err)
		}
		// The seeds read the whole log once each. Over a large one their
		// plans cost enough for PostgreSQL to compile them to machine code
		// first, which took half of the reservations seed's 1.9 s at a
		// million events (docs/benchmarks.md): longer than it saves, in
		// the transaction that holds every sink's frontier back.
		if _, err := tx.Exec(ctx, "SET LOCAL jit = off"); err != nil {
			return err
		}
		return s.Seed(ctx, tx)
	}); err != nil {
		return RebuildResult{}, fmt.Errorf("prepare fresh tables: %w", err)
	}

	var res RebuildResult
	for {
		events, err := outbox.ReadAfter(ctx, db.New(pool), res.Position, RebuildBatch)
		if err != nil {
			return RebuildResult{}, err
		}
		if len(events) == 0 {
			break
		}
		if err := fenced(func(q *db.Queries, tx pgx.Tx) error {
			if err := q.RmRebuildUseShadow(ctx); err != nil {
				return fmt.Errorf("switch to fresh tables: %w", err)
			}
			return p.Apply(ctx, tx, events)
		}); err != nil {
			return RebuildResult{}, fmt.Errorf("replay after %s: %w", res.Position, err)
		}
		res.Events += len(events)
		res.Position = events[len(events)-1].Position
	}

	if err := fenced(func(q *db.Queries, _ pgx.Tx) error {
		if err := q.RmRebuildSwap(ctx, p.Tables()); err != nil {
			return fmt.Errorf("swap in fresh tables: %w", err)
		}
		return q.OutboxCursorSave(ctx, db.OutboxCursorSaveParams{Sink: p.ID(), Txid: res.Position.TxID,
			Seq: res.Position.Seq})
	}); err != nil {
		return RebuildResult{}, err
	}
	return res, nil
}
