// Package bench is what cmd/compute-bench runs: one run that measures the
// control plane's write path, placement, and outbox on a durable
// PostgreSQL, and pgbench on the same server in the same run. Absolute figures on a shared
// 2-core machine move ±20 % from run to run; a ratio to pgbench measured
// minutes apart on the same server does not, so every headline figure is a
// ratio and the raw numbers are kept beside it for reference.
package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"
)

// Config is what compute-bench was asked to do.
type Config struct {
	// Quick is the CI-size run (under ~90 s): short phases, 100 and 1,000
	// nodes, no 1M-event backlog.
	Quick bool
	// DatabaseURL names a server to use; empty starts a private durable
	// (fsync on) cluster in PGDir. Either way the benchmark creates and
	// drops its own databases (bench_app, bench_outbox, bench_pgbench).
	DatabaseURL string
	PGDir       string
	// ResultsDir receives <date>.json; ChartDir receives ratios.svg.
	ResultsDir string
	ChartDir   string
	// PgbenchPath is the pgbench program; empty looks on PATH, then under
	// /usr/lib/postgresql/*/bin.
	PgbenchPath string
	// Binary is the compute program the end-to-end measurements run as
	// `compute serve` child processes (SSE fan-out, webhooks, API
	// processes); compute-bench builds ./cmd/compute (BuildCompute) unless
	// --compute names one. Empty records those measurements as not
	// measured.
	Binary string
	// Progress gets one rewritten status line (stderr); Out gets the table.
	Progress io.Writer
	Out      io.Writer
	Logger   *slog.Logger
	// Command is recorded with the results so a figure names its producer.
	Command string
	// MaxConns is the in-process load's database pool, as an API process
	// has it (COMPUTE_MAX_CONNS); 0 gives every client a connection.
	MaxConns int32
	// Only names the suites to run (reservations, outbox, pipeline,
	// apiscale, sse, nats); empty runs them all. The others are recorded as not
	// measured: a short loop for one change, never a documented run.
	Only []string
}

// Suites is every suite Config.Only can name, in the order a run takes them.
var Suites = []string{"reservations", "outbox", "pipeline", "apiscale", "sse", "nats", "replica"}

// plan is the size of every measurement. Every loop in the package is
// bounded by a count from here and by a duration from here.
type plan struct {
	phase         time.Duration // length of each timed load run (ours and pgbench's)
	pgbenchScale  int
	concurrency   []int // reservation and pgbench client counts
	tenants       int
	scaleNodes    []int // fleet sizes for the placement-latency curve
	scaleRequests int   // sequential placements per fleet size
	seedWorkers   int
	outboxRate    int // events/s the outbox writer aims for
	outboxPhase   time.Duration
	outboxPoll    time.Duration // the reader's polling interval
	backlogs      []int
	backlogReads  int
	maxOpsPerRun  int // hard cap on requests in one load run

	// End-to-end measurements against `compute serve` child processes.
	sseClients   int           // idle SSE streams held open for the memory figure
	sseRate      int           // events/s for the commit → SSE client latency
	ssePhase     time.Duration // length of the latency run
	webhookPhase time.Duration // length of the webhook + projection run under load
	httpClients  int           // concurrent HTTP clients of the webhook and API-process runs
	apiProcesses []int         // API process counts compared with one
	apiPhase     time.Duration // length of each API-process run

	// The nats suite (nats.go).
	natsBacklog      int           // events the JetStream sink forwards, timed
	natsStreams      int           // SSE streams of the API process, per source
	natsRate         int           // events/s they receive
	natsPhase        time.Duration // length of that run, per source and for the baseline
	natsResumeEvents int           // events each stream misses before it resumes

	// The replica suite (replica.go): reservations read back, by
	// httpClients clients for apiPhase per server.
	replicaReservations int
}

func planFor(quick bool) plan {
	if quick {
		return plan{phase: 3 * time.Second, pgbenchScale: 10, concurrency: []int{8, 32}, tenants: 64,
			scaleNodes: []int{100, 1_000}, scaleRequests: 40, seedWorkers: 6,
			outboxRate: 500, outboxPhase: 3 * time.Second, outboxPoll: 10 * time.Millisecond,
			backlogs: []int{1_000, 100_000}, backlogReads: 50, maxOpsPerRun: 50_000,
			sseClients: 1_000, sseRate: 500, ssePhase: 3 * time.Second,
			webhookPhase: 5 * time.Second, httpClients: 16, apiProcesses: []int{1, 2, 4}, apiPhase: 3 * time.Second,
			natsBacklog: 5_000, natsStreams: 1_000, natsRate: 10, natsPhase: 4 * time.Second, natsResumeEvents: 10,
			replicaReservations: 300}
	}
	return plan{phase: 15 * time.Second, pgbenchScale: 10, concurrency: []int{8, 32}, tenants: 128,
		scaleNodes: []int{100, 1_000, 10_000}, scaleRequests: 300, seedWorkers: 6,
		outboxRate: 1_000, outboxPhase: 10 * time.Second, outboxPoll: 10 * time.Millisecond,
		backlogs: []int{1_000, 100_000, 1_000_000}, backlogReads: 200, maxOpsPerRun: 500_000,
		sseClients: 10_000, sseRate: 1_000, ssePhase: 10 * time.Second,
		webhookPhase: 20 * time.Second, httpClients: 32, apiProcesses: []int{1, 2, 4}, apiPhase: 15 * time.Second,
		natsBacklog: 20_000, natsStreams: 5_000, natsRate: 10, natsPhase: 15 * time.Second, natsResumeEvents: 10,
		replicaReservations: 2_000}
}

// tinyPlan is the smallest configuration, for the package's own test.
func tinyPlan() plan {
	return plan{phase: 300 * time.Millisecond, pgbenchScale: 1, concurrency: []int{2}, tenants: 4,
		scaleNodes: []int{10, 20}, scaleRequests: 5, seedWorkers: 2,
		outboxRate: 100, outboxPhase: 300 * time.Millisecond, outboxPoll: 10 * time.Millisecond,
		backlogs: []int{100, 1_000}, backlogReads: 5, maxOpsPerRun: 500,
		sseClients: 50, sseRate: 100, ssePhase: 500 * time.Millisecond,
		webhookPhase: time.Second, httpClients: 4, apiProcesses: []int{1, 2}, apiPhase: 500 * time.Millisecond,
		natsBacklog: 300, natsStreams: 20, natsRate: 20, natsPhase: 500 * time.Millisecond, natsResumeEvents: 3,
		replicaReservations: 10}
}

// Run performs the whole benchmark, prints the table, and writes the JSON
// results and the chart. A measurement that fails is recorded as not
// measured with its error, and the run goes on: one broken figure should
// not cost the others.
func Run(ctx context.Context, cfg Config) (*Results, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	p := planFor(cfg.Quick)
	prog := newProgress(cfg.Progress)
	defer prog.done()

	prog.set("starting PostgreSQL")
	srv, err := openServer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer srv.close()

	res := newResults(cfg, p)
	if err := srv.describe(ctx, &res.Machine); err != nil {
		return nil, err
	}
	measureAll(ctx, srv, p, cfg, prog, res)
	res.computeRatios()

	if err := res.writeJSON(cfg.ResultsDir); err != nil {
		return res, err
	}
	if err := writeChart(cfg.ChartDir, res); err != nil {
		return res, err
	}
	prog.done()
	res.printTable(cfg.Out)
	return res, nil
}

// measureAll runs the measurements. The fleet is seeded first (the scale
// curve grows it); then each of our load runs comes right after the pgbench
// runs it is divided by, so that the two sides of a ratio see the same
// background load on a shared machine.
func measureAll(ctx context.Context, srv *server, p plan, cfg Config, prog *progress, res *Results) {
	gap := func(what string, err error) {
		res.NotMeasured = append(res.NotMeasured, Gap{What: what, Why: err.Error(), Failed: true})
	}
	runs := func(suite string) bool {
		if len(cfg.Only) == 0 || slices.Contains(cfg.Only, suite) {
			return true
		}
		res.NotMeasured = append(res.NotMeasured, Gap{What: "the " + suite + " suite", Why: "not named by --only"})
		return false
	}
	if runs("reservations") {
		measureWritePath(ctx, srv, p, cfg, prog, res, gap)
	}
	if runs("outbox") {
		prog.set("outbox: commit → reader latency")
		if o, err := onFreshDatabase(ctx, srv, "outbox", func(url string) (OutboxResult, error) { return outboxSuite(ctx, url, p, prog) }); err != nil {
			gap("outbox latency and backlog reads", err)
		} else {
			res.Outbox = o
		}
	}
	if runs("pipeline") {
		prog.set("pipeline: webhooks and projections under HTTP load")
		if r, err := onFreshDatabase(ctx, srv, "pipeline", func(url string) (PipelineResult, error) {
			return pipelineSuite(ctx, url, p, cfg.Binary, prog)
		}); err != nil {
			gap("webhook deliveries/s ÷ events/s and projection lag", err)
		} else {
			res.Pipeline = r
		}
	}
	if runs("apiscale") {
		prog.set("API processes")
		if r, err := onFreshDatabase(ctx, srv, "apiscale", func(url string) (APIScaleResult, error) {
			return apiScaleSuite(ctx, url, p, cfg.Binary, prog)
		}); err != nil {
			gap("API throughput with several API processes", err)
		} else {
			res.APIScale = r
		}
	}
	if runs("sse") {
		prog.set("SSE: commit → client latency and fan-out")
		if s, err := onFreshDatabase(ctx, srv, "sse", func(url string) (SSEResult, error) { return sseSuite(ctx, url, p, cfg.Binary, prog) }); err != nil {
			gap("SSE latency and fan-out memory", err)
		} else {
			res.SSE = s
		}
	}
	if runs("nats") {
		measureNATS(ctx, srv, p, cfg, prog, res, gap)
	}
	if runs("replica") {
		prog.set("read replica: queries from a hot standby")
		r, err := onFreshDatabase(ctx, srv, "replica", func(url string) (ReplicaResult, error) {
			return replicaSuite(ctx, srv, url, p, prog)
		})
		res.Replica = r
		if err != nil {
			gap("read-model queries served by a hot standby ÷ by the primary (the replica suite)", err)
		}
	}
	if ctx.Err() != nil {
		gap("remaining measurements", fmt.Errorf("interrupted: %w", ctx.Err()))
	}
}

// measureNATS is the nats suite on a fresh database, with a nats-server
// the benchmark starts; without one it is skipped with the reason (a
// failure under CI=true, as for the tests, since CI installs it). The
// figures measured before a failure are kept.
func measureNATS(ctx context.Context, srv *server, p plan, cfg Config, prog *progress, res *Results, gap func(string, error)) {
	const what = "JetStream forwarding and SSE served from JetStream (the nats suite)"
	bin, err := findNATSServer()
	if err != nil {
		res.NotMeasured = append(res.NotMeasured, Gap{What: what, Why: err.Error(), Failed: os.Getenv("CI") == "true"})
		return
	}
	prog.set("NATS: JetStream forwarding and SSE from JetStream")
	r, err := onFreshDatabase(ctx, srv, "nats", func(url string) (NATSResult, error) {
		return natsSuite(ctx, url, p, cfg.Binary, bin, prog)
	})
	res.NATS = r
	if err != nil {
		gap(what, err)
	}
}

// measureWritePath is pgbench and our load runs beside it, in one fleet.
func measureWritePath(ctx context.Context, srv *server, p plan, cfg Config, prog *progress, res *Results, gap func(string, error)) {
	prog.set("pgbench: initialising scale %d", p.pgbenchScale)
	pb, err := newPgbench(ctx, srv, p, cfg.PgbenchPath)
	if err != nil {
		gap("pgbench baselines", err)
	}
	app, err := newAppEnv(ctx, srv, p, prog)
	if err != nil {
		gap("every reservation measurement (fleet setup failed)", err)
		return
	}
	defer app.close()
	measureReservations(ctx, app, pb, p, cfg.MaxConns, prog, res, gap)
}

// step is one timed run: pgbench's or ours.
type step struct {
	pgbench    string // mode; "" for a reservation run
	clients    int
	syncCommit bool
	load       loadSpec
}

// measureReservations is measurements 1, 2, 3 and 6 of issue 6.
func measureReservations(ctx context.Context, app *appEnv, pb *pgbenchDB, p plan, maxConns int32, prog *progress, res *Results,
	gap func(string, error)) {
	for _, n := range p.scaleNodes {
		pt, err := app.scalePoint(ctx, n, prog)
		if err != nil {
			gap(fmt.Sprintf("placement latency at %d nodes", n), err)
			break // a larger fleet needs the smaller one seeded first
		}
		res.Scale = append(res.Scale, pt)
	}
	all := app.poolIDs()
	var steps []step
	for _, c := range p.concurrency {
		steps = append(steps, step{pgbench: "simple-update", clients: c, syncCommit: true},
			step{pgbench: "tpcb", clients: c, syncCommit: true},
			step{load: loadSpec{Name: fmt.Sprintf("uniform c%d", c), Concurrency: c, Pools: all, SyncCommit: true}})
	}
	top, low := p.concurrency[len(p.concurrency)-1], p.concurrency[0]
	steps = append(steps,
		step{load: loadSpec{Name: fmt.Sprintf("hot10 c%d", top), Concurrency: top, Pools: all[:1], SyncCommit: true}},
		step{pgbench: "simple-update", clients: low, syncCommit: false},
		step{load: loadSpec{Name: fmt.Sprintf("uniform c%d sync-off", low), Concurrency: low, Pools: all, SyncCommit: false}})
	for _, s := range steps {
		if ctx.Err() != nil {
			return
		}
		if s.load.MaxConns = int32(s.load.Concurrency); maxConns > 0 {
			s.load.MaxConns = min(s.load.MaxConns, maxConns)
		}
		if s.pgbench != "" {
			prog.set("pgbench %s c%d (%s)", s.pgbench, s.clients, p.phase)
			r, err := pb.run(ctx, s.pgbench, s.clients, s.syncCommit, p.phase)
			if err != nil {
				gap(PgbenchRun{Mode: s.pgbench, Clients: s.clients, SyncCommit: s.syncCommit}.Name(), err)
				continue
			}
			res.Pgbench = append(res.Pgbench, r)
			continue
		}
		r, err := app.runLoad(ctx, s.load, p, prog)
		if err != nil {
			gap("reservations "+s.load.Name, err)
			continue
		}
		res.Reservations = append(res.Reservations, r)
	}
}
