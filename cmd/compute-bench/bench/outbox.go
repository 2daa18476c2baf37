package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/cmd/compute-bench/benchdb"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/migrate"
	"github.com/bettercompute/compute/outbox"
)

// OutboxResult is measurement 4: how soon a committed event reaches a
// reader, how fast a reader drains compared with how fast writers append,
// and whether the keyset read costs more with a larger backlog.
type OutboxResult struct {
	TargetRate   int     `json:"targetEventsPerSec"`
	AchievedRate float64 `json:"achievedEventsPerSec"`
	PollMs       float64 `json:"readerPollMs"`
	Events       int     `json:"events"`
	Seen         int     `json:"seen"`
	P50Ms        float64 `json:"commitToReadP50Ms"`
	P99Ms        float64 `json:"commitToReadP99Ms"`
	// WriterPerSec is unpaced appends (one event per transaction, 8
	// writers); ReaderPerSec is draining the largest backlog in batches.
	WriterPerSec float64 `json:"writerEventsPerSec"`
	// WriterNoNotifyPerSec is the same writers on a pool without the
	// outbox notifier (pg.PoolOptions.NoAfterCommit): what announcing
	// appends costs the appending commits. The JSON name predates the
	// notifier, when a NOTIFY trigger was switched off instead.
	WriterNoNotifyPerSec float64        `json:"writerNoNotifyEventsPerSec"`
	ReaderPerSec         float64        `json:"readerEventsPerSec"`
	Backlogs             []BacklogPoint `json:"backlogs"`
}

// BacklogPoint is the time of one 100-event ReadAfter from the middle of a
// backlog of Events rows.
type BacklogPoint struct {
	Events int     `json:"events"`
	P50Ms  float64 `json:"readP50Ms"`
	P99Ms  float64 `json:"readP99Ms"`
}

func outboxSuite(ctx context.Context, url string, p plan, prog *progress) (OutboxResult, error) {
	pool, err := pg.Connect(ctx, url, pg.PoolOptions{MaxConns: 10, IdleInTxTimeout: time.Minute, ApplicationName: "compute-bench-outbox"})
	if err != nil {
		return OutboxResult{}, err
	}
	defer pool.Close()
	if err := migrate.Up(ctx, pool); err != nil {
		return OutboxResult{}, err
	}
	res := OutboxResult{TargetRate: p.outboxRate, PollMs: float64(p.outboxPoll.Microseconds()) / 1000}
	prog.set("outbox: commit → reader at %d events/s", p.outboxRate)
	if err := outboxLatency(ctx, pool, p, &res); err != nil {
		return res, err
	}
	// pool, opened by pg.Connect, announces its appends through its
	// outbox.Notifier, as the service's pools do.
	prog.set("outbox: unpaced writers, with the notifier")
	if res.WriterPerSec, err = appendEvents(ctx, pool, 8, 0, p.outboxPhase, p.maxOpsPerRun, nil); err != nil {
		return res, err
	}
	prog.set("outbox: unpaced writers, no notifier")
	if res.WriterNoNotifyPerSec, err = writersWithoutNotify(ctx, url, p); err != nil {
		return res, err
	}
	for _, n := range p.backlogs {
		prog.set("outbox: reads at a backlog of %d", n)
		pt, err := backlogReads(ctx, pool, n, p.backlogReads)
		if err != nil {
			return res, err
		}
		res.Backlogs = append(res.Backlogs, pt)
	}
	prog.set("outbox: draining the backlog")
	res.ReaderPerSec, err = drain(ctx, db.New(pool), p.outboxPhase*3)
	return res, err
}

// outboxLatency appends events at the target rate, one per transaction
// from four writers, while one reader polls ReadAfter every p.outboxPoll
// (the service's own reader is poked by LISTEN; polling is its floor).
// Latency runs from the writer's commit returning to the reader's batch
// returning; a reader that wins the race counts as 0.
func outboxLatency(ctx context.Context, pool *pgxpool.Pool, p plan, res *OutboxResult) error {
	q := db.New(pool)
	xmin, err := benchdb.New(pool).BenchOutboxFrontier(ctx)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	acked := map[string]time.Time{}
	onCommit := func(subject string, at time.Time) { mu.Lock(); acked[subject] = at; mu.Unlock() }
	seen := map[string]time.Time{}
	// expect is -1 while the writers run, then the number they committed:
	// the reader stops once it has seen that many. An empty read proves
	// nothing, since any transaction on the cluster can hold the frontier.
	var expect atomic.Int64
	expect.Store(-1)
	readErr := make(chan error, 1)
	go func() {
		readErr <- pollReader(ctx, q, outbox.Position{TxID: uint64(xmin)}, p.outboxPoll, &expect,
			time.Now().Add(p.outboxPhase+30*time.Second), seen)
	}()
	rate, err := appendEvents(ctx, pool, 4, p.outboxRate, p.outboxPhase, p.maxOpsPerRun, onCommit)
	mu.Lock()
	expect.Store(int64(len(acked)))
	mu.Unlock()
	if rerr := <-readErr; err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	res.AchievedRate, res.Events, res.Seen = rate, len(acked), 0
	var lat []time.Duration
	for s, at := range acked {
		if t, ok := seen[s]; ok {
			res.Seen++
			lat = append(lat, max(0, t.Sub(at)))
		}
	}
	if res.Seen == 0 {
		return fmt.Errorf("the reader saw none of %d events", len(acked))
	}
	res.P50Ms, res.P99Ms = percentileMs(lat, 0.50), percentileMs(lat, 0.99)
	return nil
}

// pollReader reads after pos until it has seen as many events as expect
// says were committed (once it is no longer -1), or until the deadline.
func pollReader(ctx context.Context, q *db.Queries, pos outbox.Position, poll time.Duration, expect *atomic.Int64,
	deadline time.Time, seen map[string]time.Time) error {
	for time.Now().Before(deadline) {
		if n := expect.Load(); n >= 0 && int64(len(seen)) >= n {
			return nil
		}
		batch, err := outbox.ReadAfter(ctx, q, pos, 1000)
		if err != nil {
			return err
		}
		now := time.Now()
		for _, ev := range batch {
			seen[ev.Subject] = now
			pos = ev.Position
		}
		if len(batch) == 0 {
			time.Sleep(poll)
		}
	}
	return nil
}

// benchEventType is the type of the events the benchmark appends: no type
// of the server's catalog, so that nothing but the benchmark reads it as
// one of its own.
const benchEventType = "bench.event"

// appendEvents commits one event per transaction from `writers`
// goroutines, paced to rate events/s (0: as fast as they can), for the
// phase and at most maxEvents. It returns the committed rate.
func appendEvents(ctx context.Context, pool *pgxpool.Pool, writers, rate int, phase time.Duration, maxEvents int,
	onCommit func(subject string, at time.Time)) (float64, error) {
	start := time.Now()
	var next, done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				k := next.Add(1) - 1
				due := start
				if rate > 0 {
					due = start.Add(time.Duration(k) * time.Second / time.Duration(rate))
				}
				if k >= int64(maxEvents) || due.Sub(start) >= phase || time.Since(start) >= phase {
					return
				}
				time.Sleep(time.Until(due))
				subject := fmt.Sprintf("bench/%d", k)
				ev, err := core.NewEvent(benchEventType, "bench", subject, map[string]any{"k": k})
				if err == nil {
					err = pg.InTx(ctx, pool, func(tx pgx.Tx) error { _, err := outbox.Append(ctx, db.New(tx), ev); return err })
				}
				if err != nil {
					errs <- err
					return
				}
				done.Add(1)
				if onCommit != nil {
					onCommit(subject, time.Now())
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, fmt.Errorf("append event: %w", err)
	}
	return float64(done.Load()) / time.Since(start).Seconds(), nil
}

// writersWithoutNotify repeats the unpaced append run on a pool of the
// same size whose commits announce nothing (no after-commit hooks, so no
// outbox notifier). The notifier sends one NOTIFY per window, outside the
// appending transactions; a NOTIFY inside them (the trigger of migration
// 0010) held PostgreSQL's database-wide notify lock across each commit's
// WAL flush and made appending commits queue for one another. This run
// shows what announcing appends costs now.
func writersWithoutNotify(ctx context.Context, url string, p plan) (float64, error) {
	pool, err := pg.Connect(ctx, url, pg.PoolOptions{MaxConns: 10, IdleInTxTimeout: time.Minute,
		ApplicationName: "compute-bench-outbox", NoAfterCommit: true})
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	return appendEvents(ctx, pool, 8, 0, p.outboxPhase, p.maxOpsPerRun, nil)
}
