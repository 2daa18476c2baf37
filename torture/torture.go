// Package torture attacks the capacity core with everything at once, the
// way `compute torture` runs it: many goroutines create, extend, release and
// cancel reservations for two tenants while an operator cordons, drains,
// taints, quarantines and flips GPU modes and health, daemon sessions come
// and go, and the simulated clock starts and ends windows. It then judges
// the run by evidence independent of the code under test: the SQL
// invariants (internal/invariants) after every CheckEvery operations and at
// the end, a porcupine check of every reservation's history, PostgreSQL's own
// deadlock errors (seen by a tracer, since the transaction helper retries
// them), and the state the fleet is left in once every window has ended.
package torture

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/multitracer"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/invariants"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/workqueue"
)

// MinOps is the fewest operations a run can pass with: it passes only
// when it exercised what it claims (Report.Failures), the replan cap
// reached by a rush (the first at operation rushEvery/2, then every
// rushEvery) and a preemption a call saw among them; a run of 200
// reported both missing, whatever it found. compute torture refuses fewer.
const MinOps = 1000

// Options size a run.
type Options struct {
	// Ops is how many operations run in all (default 1,000).
	Ops int
	// Concurrency is how many goroutines run them (default 32).
	Concurrency int
	// CheckEvery is how many operations pass between invariant checks
	// (default 100).
	CheckEvery int
	// Seed makes the operation choices repeatable (the interleaving is not).
	Seed uint64
	// HistoryTimeout bounds porcupine (default 60 s).
	HistoryTimeout time.Duration
	// AdminURL is where the scratch database is created and dropped: a
	// direct connection to the server when serverURL goes through
	// PgBouncer in transaction pooling mode (CREATE DATABASE needs a
	// session of its own). Empty means serverURL.
	AdminURL string
	// Keep leaves the scratch database behind when the run fails, for a
	// post-mortem; Report.Database names it.
	Keep   bool
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.Ops <= 0 {
		o.Ops = 1000
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	if o.CheckEvery <= 0 {
		o.CheckEvery = 100
	}
	if o.HistoryTimeout <= 0 {
		o.HistoryTimeout = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// RunOnServer runs the torture in a scratch database of the PostgreSQL
// server serverURL points at (any database of it: only the server is
// used), and drops the database afterwards.
func RunOnServer(ctx context.Context, serverURL string, opts Options) (Report, error) {
	opts.defaults()
	tracer := newDeadlockTracer()
	s, err := openScratch(ctx, serverURL, opts.AdminURL, int32(opts.Concurrency)+8, multitracer.New(tracer, rushTracer{}))
	if err != nil {
		return Report{}, err
	}
	rep, err := runOn(ctx, s.Pool, tracer, opts)
	if opts.Keep && (err != nil || len(rep.Failures()) > 0) {
		s.Pool.Close()
		rep.Database = s.name
		return rep, err
	}
	if derr := s.drop(context.WithoutCancel(ctx)); err == nil {
		err = derr
	}
	return rep, err
}

// run is the shared state of one run.
type run struct {
	h      *commands.Handlers
	q      *db.Queries
	pool   *pgxpool.Pool
	fleet  fleet
	hist   *history
	ids    *reservationIDs
	tally  *tally
	capHit atomic.Int64
	// preemptionsSeen counts the calls that observed a reservation
	// preempted (a read answering it, a refusal naming it).
	preemptionsSeen atomic.Int64

	// background runs the due work (placement retries, activation,
	// expiry, liveness) when the clock ticks; one tick at a time.
	tickMu     sync.Mutex
	background *workqueue.Worker

	sessionsMu sync.Mutex
	sessions   map[string]int64 // node → open session's epoch

	violationsMu sync.Mutex
	violations   []invariants.Violation
}

// runOn seeds the fleet in pool's (fresh, migrated, simulated-clock)
// database, runs opts.Ops operations, ends every window and judges the run.
func runOn(ctx context.Context, pool *pgxpool.Pool, tracer *deadlockTracer, opts Options) (Report, error) {
	r := &run{pool: pool, q: db.New(pool), hist: newHistory(), ids: newReservationIDs(), tally: newTally(),
		sessions: map[string]int64{}}
	r.h = commands.New(pool, commands.Config{Logger: opts.Logger, Test: commands.TestConfig{NodesWithoutDaemons: true,
		ReplanCapReached: func() { r.capHit.Add(1) }}})
	var err error
	if r.fleet, err = seed(ctx, r.h, r.q, batchGrace(opts.Seed)); err != nil {
		return Report{}, fmt.Errorf("seed the fleet: %w", err)
	}
	r.background = r.newBackground(opts.Logger)
	if err := r.h.EnsureNodeLivenessSweep(ctx); err != nil {
		return Report{}, err
	}
	if err := r.h.EnsureReservationResync(ctx); err != nil {
		return Report{}, err
	}

	checks, err := r.drive(ctx, opts)
	if err != nil {
		return Report{}, err
	}
	if err := r.readBack(ctx); err != nil {
		return Report{}, err
	}
	// The end: every window ends, the background catches up, and
	// everything must be given back.
	if err := r.finish(ctx); err != nil {
		return Report{}, err
	}
	r.checkInvariants(ctx, "at the end")
	checks++
	if err := r.checkGivenBack(ctx); err != nil {
		return Report{}, err
	}
	return Report{
		Ops: opts.Ops, Outcomes: r.tally.snapshot(), Checks: checks,
		Deadlocks: tracer.snapshot(), DeadlockSamples: tracer.samples, PreemptionDeadlocks: tracer.preemptions(),
		ReplanCapReached: int(r.capHit.Load()), History: r.hist.check(opts.HistoryTimeout), Violations: r.violations,
		LivenessFlips: r.count(ctx, core.EventNodeUnreachable),
		Preemptions:   r.count(ctx, core.EventReservationPreempted), PreemptionsSeen: int(r.preemptionsSeen.Load()),
		CutBacks: r.count(ctx, core.EventReservationShortened),
	}, nil
}

// drive runs opts.Ops operations on opts.Concurrency goroutines, a rush now
// and then, and the invariants every opts.CheckEvery operations. It
// returns how many checks ran; an internal error of any operation stops
// the run and is returned.
func (r *run) drive(ctx context.Context, opts Options) (int, error) {
	var (
		done   atomic.Int64
		checks atomic.Int64
		wg     sync.WaitGroup
		first  error
		errMu  sync.Mutex
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fail := func(err error) {
		errMu.Lock()
		defer errMu.Unlock()
		if first == nil {
			first = err
			cancel()
		}
	}
	for i := range opts.Concurrency {
		w := &worker{id: i, r: rand.New(rand.NewPCG(opts.Seed, uint64(i))), actor: tenants[i%len(tenants)], run: r}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := done.Add(1); n <= int64(opts.Ops) && ctx.Err() == nil; n = done.Add(1) {
				kind, out, err := "rush", "", error(nil)
				if n%rushEvery == rushEvery/2 {
					err = r.rush(ctx)
				} else {
					kind = pick(w.r)
					out, err = w.op(ctx, kind)
				}
				if err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("%s: %w", kind, err))
					}
					return
				}
				if kind != "rush" {
					r.tally.add(kind, out)
				}
				if n%int64(opts.CheckEvery) == 0 {
					r.checkInvariants(ctx, fmt.Sprintf("after %d ops", n))
					checks.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return int(checks.Load()), first
}

// readBack has each tenant read every reservation it created, once, after
// the operations and before the windows end, as a client that polls its
// reservations would. The reads join the histories like any other call,
// and every preempted reservation is then observed by one call at least:
// the random calls of a short run may miss the few preemptions it makes
// (TestTorture's 1,000 operations preempt about ten reservations of some
// four hundred, and a run under load once observed none of them).
func (r *run) readBack(ctx context.Context) error {
	all := r.ids.all()
	for i, actor := range tenants {
		w := &worker{id: len(all) + 1000 + i, actor: actor, run: r} // a client of its own in the histories
		for _, id := range all[actor.Tenant] {
			out, err := w.call(ctx, "get", id, true)
			if err != nil {
				return fmt.Errorf("read back %s: %w", id, err)
			}
			r.tally.add("read back", out)
		}
	}
	return nil
}

// violation records a broken rule the run observed itself.
func (r *run) violation(name, format string, args ...any) {
	r.violationsMu.Lock()
	defer r.violationsMu.Unlock()
	r.violations = append(r.violations, invariants.Violation{Invariant: name, Detail: fmt.Sprintf(format, args...)})
}

// checkInvariants runs every invariant in one REPEATABLE READ snapshot
// while the run goes on around it.
func (r *run) checkInvariants(ctx context.Context, when string) {
	var v []invariants.Violation
	err := pgx.BeginTxFunc(ctx, r.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		v, err = invariants.Check(ctx, db.New(tx))
		return err
	})
	if err != nil && ctx.Err() == nil {
		r.violation("check", "%s: %v", when, err)
	}
	for _, x := range v {
		r.violation(x.Invariant, "%s: %s", when, x.Detail)
	}
}

// now is the simulated clock.
func (r *run) now() time.Time {
	t, err := r.q.ClockNow(context.Background())
	if err != nil {
		return Epoch
	}
	return t
}

// newBackground is the worker the ticks drain the work queue with: the
// reconcilers of reservations, node liveness and node assignments, fenced
// by their shard leases as `compute serve` runs them.
func (r *run) newBackground(logger *slog.Logger) *workqueue.Worker {
	w := workqueue.NewWorker(r.pool, "torture-background", nil, logger)
	for kind, handle := range r.h.Reconcilers().ByKind() {
		w.Handle(kind, func(ctx context.Context, it workqueue.Item) error { return handle(withOp(ctx, "background"), it) })
	}
	return w
}

// maxDrainRounds bounds one tick's catch-up, so a handler that keeps
// asking to run again cannot hang the run.
const maxDrainRounds = 100

// tick moves the simulated clock by d and runs the work that came due.
func (r *run) tick(ctx context.Context, d time.Duration) error {
	r.tickMu.Lock()
	defer r.tickMu.Unlock()
	if _, err := r.q.SimClockAdvance(ctx, d.Seconds()); err != nil {
		return fmt.Errorf("advance the clock: %w", err)
	}
	for range maxDrainRounds {
		n, err := r.background.RunOnce(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
	return nil
}

// flipSession closes the node's daemon session if one is open, or opens
// one: the node goes disconnected, then unreachable after a few ticks, and
// connected again.
func (r *run) flipSession(ctx context.Context, node string) error {
	r.sessionsMu.Lock()
	defer r.sessionsMu.Unlock()
	if epoch, open := r.sessions[node]; open {
		delete(r.sessions, node)
		return r.h.NodeSessions().CloseNodeSession(ctx, node, epoch, 0)
	}
	gw, err := lease.Acquire(ctx, r.q, "gateway:"+gatewayID, gatewayID, lease.GatewayTTL)
	if err != nil {
		return err
	}
	s, err := r.h.NodeSessions().OpenNodeSession(ctx, commands.OpenNodeSession{NodeID: node, Gateway: gw, GatewayID: gatewayID,
		JournalID: "torture-journal-" + node})
	if err != nil {
		return err
	}
	r.sessions[node] = s.Epoch
	return nil
}

// finish ends every window: the clock moves past the last possible end in
// ticks short enough not to look like an outage, draining as it goes.
func (r *run) finish(ctx context.Context) error {
	var latest time.Time
	if err := r.pool.QueryRow(ctx, `SELECT COALESCE(max(upper(during)), compute_now()) FROM reservations`).Scan(&latest); err != nil {
		return fmt.Errorf("latest end: %w", err)
	}
	for r.now().Before(latest.Add(time.Minute)) {
		if err := r.tick(ctx, tickStep); err != nil {
			return err
		}
	}
	return nil
}

// checkGivenBack asserts that once every window has ended nothing is held:
// no live reservation, no quota used, no node resource charged.
func (r *run) checkGivenBack(ctx context.Context) error {
	for _, c := range []struct{ name, sql string }{
		{"expiry", `SELECT count(*) FROM reservations WHERE state IN ('pending', 'booked', 'active')`},
		{"quota-returned", `SELECT count(*) FROM quota_usage WHERE used <> 0`},
		{"allocations-returned", `SELECT count(*) FROM allocations WHERE released_at IS NULL`},
	} {
		var n int
		if err := r.pool.QueryRow(ctx, c.sql).Scan(&n); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		if n > 0 {
			r.violation(c.name, "%d rows still held after every window ended", n)
		}
	}
	return nil
}

// count is how many events of type typ the run wrote.
func (r *run) count(ctx context.Context, typ string) int {
	var n int
	if err := r.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE type = $1`, typ).Scan(&n); err != nil {
		return -1
	}
	return n
}
