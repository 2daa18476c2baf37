package bench

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/bettercompute/compute/cmd/compute-bench/benchdb"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg"
)

// loadSpec is one timed reservation run.
type loadSpec struct {
	Name        string
	Concurrency int
	Pools       []string // each request picks one of these at random
	SyncCommit  bool
	// MaxConns is the load's database pool: an API process's
	// (COMPUTE_MAX_CONNS), so that Concurrency callers share it as they
	// would share one `compute serve`, at most one connection each.
	MaxConns int32
}

// LoadRun is the outcome of one reservation run. Each worker creates a
// one-GPU reservation in a random pool for the same one-hour window and
// releases it at once, so the fleet never fills and placers really compete
// for the same atoms; PerSec counts booked creates (each followed by its
// release, i.e. two committed commands per reservation).
type LoadRun struct {
	Name        string           `json:"name"`
	Concurrency int              `json:"concurrency"`
	MaxConns    int32            `json:"maxConns"`
	Pools       int              `json:"pools"`
	Nodes       int              `json:"nodes"`
	SyncCommit  bool             `json:"synchronousCommit"`
	Seconds     float64          `json:"seconds"`
	Booked      int64            `json:"booked"`
	Pending     int64            `json:"pending"`
	Errors      map[string]int64 `json:"errors"`
	PerSec      float64          `json:"reservationsPerSec"`
	P50Ms       float64          `json:"createP50Ms"`
	P99Ms       float64          `json:"createP99Ms"`
	// Deadlocks is pg_stat_database.deadlocks over the run: each 40P01 was
	// replayed by the server (pg.InTx or a placement savepoint), invisible to
	// the client but paid in latency.
	Deadlocks  int64 `json:"deadlocks"`
	Multixacts int64 `json:"multixacts"`
	// RetriesPer1000 counts outcomes a client would have to retry — pending
	// (no node after the placement attempts) and CONFLICT errors — per 1,000
	// booked; DeadlocksPer1000 the server-side 40P01 replans.
	RetriesPer1000           float64 `json:"clientRetriesPer1000"`
	DeadlocksPer1000         float64 `json:"deadlockReplansPer1000"`
	MultixactsPerReservation float64 `json:"multixactsPerReservation"`
	// What one command asks of PostgreSQL, counted by a tracer on the
	// load's pool (pg.RoundTripTracer): statements and round trips per
	// create and per release (a pgx batch is one round trip).
	StatementsPerCreate  float64 `json:"statementsPerCreate"`
	RoundTripsPerCreate  float64 `json:"roundTripsPerCreate"`
	StatementsPerRelease float64 `json:"statementsPerRelease"`
	RoundTripsPerRelease float64 `json:"roundTripsPerRelease"`
	// StatementsPerReservationPGSS is the same count from the server's
	// side, pg_stat_statements' calls in the load's database over the run ÷
	// booked; 0 when the extension is not available.
	StatementsPerReservationPGSS float64 `json:"statementsPerReservationPgss,omitempty"`
	StatementsPerReservation     float64 `json:"statementsPerReservation"`
	// CPU milliseconds per booked reservation (create + release): this
	// process (load generator + commands) and the PostgreSQL server (all
	// its processes, from /proc); ServerCPUMs is 0 when unreadable.
	GoCPUMsPerReservation     float64 `json:"goCpuMsPerReservation"`
	ServerCPUMsPerReservation float64 `json:"serverCpuMsPerReservation"`
	// CPUBusyPercent is that CPU, Go and PostgreSQL together, as a share of
	// what the machine's cores could give over the run: near 100 % says the
	// run was bound by CPU, not by locks, the disk or the clients.
	CPUBusyPercent float64 `json:"cpuBusyPercent"`
	// TopStatements is where the server's execution time went
	// (pg_stat_statements; empty without it).
	TopStatements []StatementCost `json:"topStatements,omitempty"`
}

// workerTally is one worker's counts, merged after the run without locks.
type workerTally struct {
	lat     []time.Duration
	booked  int64
	pending int64
	errs    map[string]int64
	// creates and releases are the calls whose statements were counted in
	// the run's createRT and releaseRT.
	creates, releases int64
}

// commandCounts are the round-trip counters of one load run, by command.
type commandCounts struct {
	create, release, other pg.RoundTrips
}

// runLoad runs spec for p.phase (and at most p.maxOpsPerRun requests) on a
// pool of its own, so that the session settings (synchronous_commit) apply
// to it alone and closing it flushes its backends' statistics.
func (e *appEnv) runLoad(ctx context.Context, spec loadSpec, p plan, prog *progress) (LoadRun, error) {
	params := map[string]string{}
	if !spec.SyncCommit {
		params["synchronous_commit"] = "off"
	}
	u, err := urlWith(e.url, params)
	if err != nil {
		return LoadRun{}, err
	}
	pool, err := pg.Connect(ctx, u, pg.PoolOptions{MaxConns: spec.MaxConns,
		IdleInTxTimeout: time.Minute, ApplicationName: "compute-bench-load", Tracer: pg.RoundTripTracer{}})
	if err != nil {
		return LoadRun{}, err
	}
	h := commands.New(pool, commands.Config{Logger: slog.New(slog.DiscardHandler)})
	e.warmUp(ctx, h, spec, warmupFor(p.phase), p.maxOpsPerRun)
	q := benchdb.New(e.pool)
	mx0, err1 := q.BenchMultixactAge(ctx)
	dl0, err2 := q.BenchDeadlocks(ctx)
	if err := firstErr(err1, err2); err != nil {
		pool.Close()
		return LoadRun{}, err
	}
	meter := newCPUMeter(ctx, e.pool)
	pgss := e.statementsReset(ctx)
	counts := &commandCounts{}
	cpu0 := meter.read()
	tallies := make([]workerTally, spec.Concurrency)
	budget := make(chan struct{}, p.maxOpsPerRun)
	for range p.maxOpsPerRun {
		budget <- struct{}{}
	}
	start := time.Now()
	deadline := start.Add(p.phase)
	var wg sync.WaitGroup
	for w := range tallies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.loadWorker(ctx, h, spec, deadline, budget, counts, &tallies[w])
		}()
	}
	stopTicker := prog.tick(fmt.Sprintf("reservations: %s", spec.Name), p.phase)
	wg.Wait()
	stopTicker()
	elapsed := time.Since(start)
	cpu1 := meter.read()
	pool.Close()
	calls, callsOK := e.statementsCalls(ctx, pgss)
	top := e.topStatements(ctx, callsOK, 8)
	// Backends publish their statistics when they exit; give the ones just
	// closed a moment to do so before reading pg_stat_database.
	time.Sleep(700 * time.Millisecond)
	mx1, err1 := q.BenchMultixactAge(ctx)
	dl1, err2 := q.BenchDeadlocks(ctx)
	if err := firstErr(err1, err2); err != nil {
		return LoadRun{}, err
	}
	r := LoadRun{Name: spec.Name, Concurrency: spec.Concurrency, MaxConns: spec.MaxConns, Pools: len(spec.Pools), Nodes: len(spec.Pools) * nodesPerPool,
		SyncCommit: spec.SyncCommit, Seconds: elapsed.Seconds(), Errors: map[string]int64{},
		Deadlocks: dl1 - dl0, Multixacts: mx1 - mx0}
	var lat []time.Duration
	var creates, releases int64
	for _, t := range tallies {
		creates += t.creates
		releases += t.releases
		r.Booked += t.booked
		r.Pending += t.pending
		for k, v := range t.errs {
			r.Errors[k] += v
		}
		lat = append(lat, t.lat...)
	}
	if r.Booked == 0 {
		return r, fmt.Errorf("no reservation booked in %s (errors: %v, pending: %d)", elapsed, r.Errors, r.Pending)
	}
	r.PerSec = float64(r.Booked) / r.Seconds
	r.P50Ms, r.P99Ms = percentileMs(lat, 0.50), percentileMs(lat, 0.99)
	r.RetriesPer1000 = float64(r.Pending+r.Errors[string(core.CodeConflict)]) * 1000 / float64(r.Booked)
	r.DeadlocksPer1000 = float64(r.Deadlocks) * 1000 / float64(r.Booked)
	r.MultixactsPerReservation = float64(r.Multixacts) / float64(r.Booked)
	per := func(n int64, d int64) float64 {
		if d == 0 {
			return 0
		}
		return float64(n) / float64(d)
	}
	r.StatementsPerCreate = per(counts.create.Statements.Load(), creates)
	r.RoundTripsPerCreate = per(counts.create.RoundTrips.Load(), creates)
	r.StatementsPerRelease = per(counts.release.Statements.Load(), releases)
	r.RoundTripsPerRelease = per(counts.release.RoundTrips.Load(), releases)
	r.StatementsPerReservation = per(counts.create.Statements.Load()+counts.release.Statements.Load()+
		counts.other.Statements.Load(), r.Booked)
	if callsOK {
		r.StatementsPerReservationPGSS = per(calls, r.Booked)
		r.TopStatements = top
	}
	r.GoCPUMsPerReservation = float64((cpu1.self - cpu0.self).Microseconds()) / 1000 / float64(r.Booked)
	if cpu0.serverOK && cpu1.serverOK {
		r.ServerCPUMsPerReservation = float64((cpu1.server - cpu0.server).Microseconds()) / 1000 / float64(r.Booked)
		busy := (cpu1.self - cpu0.self) + (cpu1.server - cpu0.server)
		r.CPUBusyPercent = 100 * busy.Seconds() / (elapsed.Seconds() * float64(runtime.NumCPU()))
	}
	return r, nil
}

// loadWorker creates and releases reservations until the deadline or the
// shared budget runs out.
// warmUp drives spec's load on h's pool for d and forgets what it did, so
// that the measured phase starts as pgbench's does (its figure leaves out
// connecting): every connection open, its backend's catalog caches filled
// and its statements prepared.
func (e *appEnv) warmUp(ctx context.Context, h *commands.Handlers, spec loadSpec, d time.Duration, maxOps int) {
	budget := make(chan struct{}, maxOps)
	for range maxOps {
		budget <- struct{}{}
	}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range spec.Concurrency {
		wg.Go(func() { e.loadWorker(ctx, h, spec, deadline, budget, &commandCounts{}, &workerTally{}) })
	}
	wg.Wait()
}

func (e *appEnv) loadWorker(ctx context.Context, h *commands.Handlers, spec loadSpec, deadline time.Time,
	budget chan struct{}, counts *commandCounts, t *workerTally) {
	createCtx := pg.WithRoundTrips(ctx, &counts.create)
	releaseCtx := pg.WithRoundTrips(ctx, &counts.release)
	otherCtx := pg.WithRoundTrips(ctx, &counts.other)
	t.errs = map[string]int64{}
	for ctx.Err() == nil && time.Now().Before(deadline) {
		select {
		case <-budget:
		default:
			return
		}
		actor := core.Actor{Tenant: e.tenants[rand.IntN(len(e.tenants))], Identity: "bench", Role: core.RoleMember}
		cmd := commands.CreateReservation{PoolID: spec.Pools[rand.IntN(len(spec.Pools))], GPUs: 1, GPUModel: gpuModel,
			Start: e.window, End: e.window.Add(time.Hour)}
		t0 := time.Now()
		res, err := h.CreateReservation(createCtx, actor, cmd)
		took := time.Since(t0)
		t.creates++
		if err != nil {
			t.errs[string(core.CodeOf(err))]++
			continue
		}
		endCtx := otherCtx
		if res.Reservation.State == core.ReservationBooked {
			endCtx = releaseCtx
			t.releases++
		}
		if err := e.finish(endCtx, h, actor, res.Reservation); err != nil {
			t.errs["end:"+string(core.CodeOf(err))]++
		}
		switch res.Reservation.State {
		case core.ReservationBooked:
			t.booked++
			t.lat = append(t.lat, took)
		default:
			t.pending++
		}
	}
}

// finish gives the reservation back: release when booked, cancel when
// pending (the state table allows nothing else), so capacity recycles.
func (e *appEnv) finish(ctx context.Context, h *commands.Handlers, actor core.Actor, r core.Reservation) error {
	if r.State == core.ReservationBooked {
		_, err := h.ReleaseReservation(ctx, actor, commands.ReleaseReservation{ReservationID: r.ID})
		return err
	}
	_, err := h.CancelReservation(ctx, actor, commands.CancelReservation{ReservationID: r.ID})
	return err
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
