package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/cmd/compute-bench/benchdb"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/migrate"
	"github.com/bettercompute/compute/natsink"
	"github.com/bettercompute/compute/outbox"
)

// Bounds of the nats suite's waits.
const (
	natsForwardTimeout = 5 * time.Minute  // for the sink to forward the backlog
	natsCatchUpTimeout = 2 * time.Minute  // for one client to read the whole log
	natsSinkTimeout    = 30 * time.Second // for the sink to reach the log's head
	natsSampleEvery    = 2 * time.Millisecond
)

// NATSResult is issue 27's JetStream figures, on one database with a
// nats-server the benchmark starts (file storage, as the sink's default)
// and one `compute serve --roles dispatcher` child with COMPUTE_NATS_URL,
// whose JetStream sink forwards the log throughout.
type NATSResult struct {
	ServerVersion string `json:"natsServerVersion"`

	// "events/s through JetStream ÷ direct": Backlog events are committed
	// before the sink starts. DrainPerSec is the outbox reader's rate over
	// them (outbox.ReadAfter in batches of 100, as the dispatcher reads,
	// in this process, after one warm-up pass); ForwardPerSec is the
	// sink's, in the dispatcher child: the events between the first and
	// the last move of its cursor ÷ the time between them (each event is
	// published and acknowledged by JetStream before the next).
	Backlog       int     `json:"backlogEvents"`
	DrainPerSec   float64 `json:"outboxDrainEventsPerSec"`
	ForwardPerSec float64 `json:"jetStreamForwardEventsPerSec"`

	// "SSE from JetStream vs from PostgreSQL": one `compute serve --roles
	// api` child per source (COMPUTE_STREAM_SOURCE), Streams SSE clients
	// on it receiving bench events committed at Rate for Phase; Baseline
	// is the same commits with no API process at all.
	Streams      int           `json:"streams"`
	Rate         int           `json:"targetEventsPerSec"`
	PhaseSeconds float64       `json:"phaseSeconds"`
	ResumeEvents int           `json:"resumeEvents"`
	Baseline     NATSStreamRun `json:"baseline"`
	Postgres     NATSStreamRun `json:"postgres"`
	JetStream    NATSStreamRun `json:"jetstream"`
}

// NATSStreamRun is one API process with one stream source, or the
// baseline without one.
type NATSStreamRun struct {
	Source string `json:"source"` // postgres, nats; "" for the baseline

	// Catch-up: one client opens the stream at the start of the log
	// (?after=) and reads all CatchUpEvents events in it.
	CatchUpEvents int     `json:"catchUpEvents"`
	CatchUpPerSec float64 `json:"catchUpEventsPerSec"`

	// Steady: the Streams clients are open (live, no cursor) while Events
	// are committed. ServerCPUMsPerSec is the PostgreSQL server's CPU
	// (postmaster and every backend and helper, cpu.go) over the commits,
	// in ms per second; APICPUMsPerSec the API child's.
	// ServerCPUMsPerSecPer1000 is (ServerCPUMsPerSec − the baseline's) per
	// 1,000 streams: what serving the streams costs the primary.
	Events                   int     `json:"events"`
	AchievedRate             float64 `json:"achievedEventsPerSec"`
	Seen                     int64   `json:"seen"` // frames over every stream: Events × Streams when all arrived
	Ended                    int     `json:"endedEarly"`
	ServerCPUMsPerSec        float64 `json:"postgresCpuMsPerSec"`
	APICPUMsPerSec           float64 `json:"apiCpuMsPerSec"`
	ServerCPUMsPerSecPer1000 float64 `json:"postgresCpuMsPerSecPer1000Streams"`

	// Resume: every stream goes away, ResumeEvents are committed, and
	// every stream comes back with Last-Event-ID (as after a deploy or
	// when COMPUTE_STREAM_MAX_LIFETIME ends them). ResumeServerCPUMs is
	// PostgreSQL's CPU from the first reconnect until every stream has the
	// missed events, raw (nothing subtracted); …Per1000 divides it by
	// Streams / 1,000.
	ResumeSeen               int64   `json:"resumeSeen"`
	ResumeSeconds            float64 `json:"resumeSeconds"`
	ResumeServerCPUMs        float64 `json:"resumePostgresCpuMs"`
	ResumeServerCPUMsPer1000 float64 `json:"resumePostgresCpuMsPer1000Streams"`
}

// natsSuite measures the JetStream sink's forwarding rate and SSE served
// from JetStream against SSE served from PostgreSQL, on the database at
// url; natsBin is the nats-server program.
func natsSuite(ctx context.Context, url string, p plan, binary, natsBin string, prog *progress) (NATSResult, error) {
	res := NATSResult{Backlog: p.natsBacklog, Streams: p.natsStreams, Rate: p.natsRate,
		PhaseSeconds: p.natsPhase.Seconds(), ResumeEvents: p.natsResumeEvents}
	if binary == "" {
		return res, errors.New("no compute binary to run (Config.Binary is empty)")
	}
	pool, err := pg.Connect(ctx, url, pg.PoolOptions{MaxConns: 10, IdleInTxTimeout: time.Minute, ApplicationName: "compute-bench-nats"})
	if err != nil {
		return res, err
	}
	defer pool.Close()
	if err := migrate.Up(ctx, pool); err != nil {
		return res, err
	}
	tok, err := (&commands.Tokens{Pool: pool}).CreateToken(ctx, operator, "bench", "bench", core.RoleMember)
	if err != nil {
		return res, err
	}
	prog.set("NATS: starting nats-server")
	ns, err := startNATSServer(ctx, natsBin)
	if err != nil {
		return res, err
	}
	defer ns.stop()
	res.ServerVersion = ns.Version
	q := db.New(pool)

	prog.set("NATS: committing a backlog of %d events", p.natsBacklog)
	if _, err := appendEvents(ctx, pool, 8, 0, natsForwardTimeout, p.natsBacklog, nil); err != nil {
		return res, err
	}
	prog.set("NATS: the outbox reader drains the backlog")
	log, drain, err := drainOutbox(ctx, pool)
	if err != nil {
		return res, err
	}
	res.DrainPerSec = drain
	prog.set("NATS: the JetStream sink forwards %d events", len(log.positions))
	disp, fwd, err := forwardBacklog(ctx, q, binary, url, ns.URL, log.positions)
	if disp != nil {
		defer disp.stop()
	}
	if err != nil {
		return res, err
	}
	res.ForwardPerSec = fwd

	meter := newCPUMeter(ctx, pool)
	if meter.postmaster == 0 {
		return res, errors.New("the PostgreSQL server's processes cannot be read (/proc): no CPU figure")
	}
	streams := p.natsStreams + 1
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		ResponseHeaderTimeout: sseSettleTimeout,
		DisableCompression:    true,
	}
	defer tr.CloseIdleConnections()
	d := sseDialer{client: &http.Client{Transport: tr}, token: tok.Secret, prog: prog}

	prog.set("NATS: baseline, %d events/s for %s without an API process", p.natsRate, p.natsPhase)
	if res.Baseline, _, err = natsSteady(ctx, pool, meter, nil, d, p); err != nil {
		return res, err
	}
	for _, source := range []string{"postgres", "nats"} {
		env := []string{"COMPUTE_STREAM_SOURCE=" + source, "COMPUTE_NATS_URL=" + ns.URL,
			fmt.Sprintf("COMPUTE_STREAMS_PER_TOKEN=%d", streams), fmt.Sprintf("COMPUTE_STREAMS_PER_TENANT=%d", streams),
			fmt.Sprintf("COMPUTE_HTTP_MAX_CONNS=%d", streams+100)}
		run, err := natsSourceRun(ctx, pool, q, meter, binary, url, env, d, p, prog)
		run.Source = source
		if run.Events > 0 {
			run.ServerCPUMsPerSecPer1000 = (run.ServerCPUMsPerSec - res.Baseline.ServerCPUMsPerSec) / (float64(p.natsStreams) / 1000)
		}
		if source == "postgres" {
			res.Postgres = run
		} else {
			res.JetStream = run
		}
		if err != nil {
			return res, fmt.Errorf("streams from %s: %w", source, err)
		}
	}
	return res, nil
}

// outboxLog is the whole log as outbox.ReadAfter reads it.
type outboxLog struct {
	positions []outbox.Position
	bench     int // events of type bench.event, what the streams ask for
}

func (l outboxLog) last() outbox.Position { return l.positions[len(l.positions)-1] }

// drainOutbox reads the whole log with outbox.ReadAfter in batches of
// 100, once to warm up and once timed, and returns it and the timed
// pass's events per second. It first waits until everything committed
// before the call is visible to readers: a transaction still running
// anywhere on the server (another suite's, another test's) holds the
// frontier back, and a read before it passes would miss the newest
// events.
func drainOutbox(ctx context.Context, pool *pgxpool.Pool) (outboxLog, float64, error) {
	var log outboxLog
	var perSec float64
	if err := waitFrontier(ctx, benchdb.New(pool)); err != nil {
		return log, 0, err
	}
	q := db.New(pool)
	for pass := range 2 {
		log = outboxLog{positions: log.positions[:0]}
		start := time.Now()
		var after outbox.Position
		for {
			batch, err := outbox.ReadAfter(ctx, q, after, 100)
			if err != nil {
				return log, 0, err
			}
			if len(batch) == 0 {
				break
			}
			for _, e := range batch {
				log.positions = append(log.positions, e.Position)
				if e.Type == "bench.event" {
					log.bench++
				}
			}
			after = batch[len(batch)-1].Position
		}
		if pass == 1 {
			perSec = float64(len(log.positions)) / time.Since(start).Seconds()
		}
	}
	if len(log.positions) == 0 {
		return log, 0, errors.New("the log is empty")
	}
	return log, perSec, nil
}

// forwardBacklog starts the dispatcher child with the JetStream sink and
// times its cursor over positions (the whole log): the events between the
// first and the last cursor it is seen at, divided by the time between.
// The child keeps running for the rest of the suite.
func forwardBacklog(ctx context.Context, q *db.Queries, binary, url, natsURL string, positions []outbox.Position) (*serveProcess, float64, error) {
	index := make(map[outbox.Position]int, len(positions))
	for i, pos := range positions {
		index[pos] = i + 1 // events up to and including pos
	}
	last := positions[len(positions)-1]
	type sample struct {
		at  time.Time
		cur outbox.Position
	}
	sctx, cancel := context.WithTimeout(ctx, natsForwardTimeout)
	defer cancel()
	samples := make(chan [2]sample, 1)
	go func() {
		var first sample
		for sctx.Err() == nil {
			cur, err := outbox.CursorOf(sctx, q, natsink.SinkID)
			now := time.Now()
			if err == nil && !cur.IsZero() {
				if first.at.IsZero() {
					first = sample{now, cur}
				}
				if !cur.Less(last) {
					samples <- [2]sample{first, {now, cur}}
					return
				}
			}
			time.Sleep(natsSampleEvery)
		}
		close(samples)
	}()
	disp, err := startServe(ctx, binary, url, "dispatcher", "COMPUTE_NATS_URL="+natsURL)
	if err != nil {
		return nil, 0, err
	}
	s, ok := <-samples
	if !ok {
		return disp, 0, fmt.Errorf("the JetStream sink did not forward %d events within %s", len(positions), natsForwardTimeout)
	}
	n, secs := index[last]-index[s[0].cur], s[1].at.Sub(s[0].at).Seconds()
	if n <= 0 || secs <= 0 {
		return disp, 0, fmt.Errorf("the JetStream sink forwarded the backlog faster than the cursor could be sampled (%d events)", len(positions))
	}
	return disp, float64(n) / secs, nil
}

// natsSourceRun is one API child with env (its stream source): one
// client catches up the whole log, then the steady and resume runs.
func natsSourceRun(ctx context.Context, pool *pgxpool.Pool, q *db.Queries, meter cpuMeter, binary, url string, env []string,
	d sseDialer, p plan, prog *progress) (NATSStreamRun, error) {
	var run NATSStreamRun
	api, err := startServe(ctx, binary, url, "api", env...)
	if err != nil {
		return run, err
	}
	defer api.stop()
	d.url = api.URL()

	// Catch-up, once the sink has forwarded everything (both sources then
	// hold the same log).
	log, _, err := drainOutbox(ctx, pool)
	if err != nil {
		return run, err
	}
	if err := waitSinkAt(ctx, q, log.last()); err != nil {
		return run, err
	}
	run.CatchUpEvents = log.bench
	prog.set("NATS (%s): one client catches up %d events", env[0], run.CatchUpEvents)
	var got atomic.Int64
	one := d
	one.fromStart = true
	start := time.Now()
	s, err := one.open(ctx, "catch-up", 1, func(int, sseFrame, time.Time) { got.Add(1) })
	if err != nil {
		return run, err
	}
	deadline := time.Now().Add(natsCatchUpTimeout)
	for got.Load() < int64(run.CatchUpEvents) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	s.close()
	if got.Load() < int64(run.CatchUpEvents) {
		return run, fmt.Errorf("catch-up: %d of %d events within %s", got.Load(), run.CatchUpEvents, natsCatchUpTimeout)
	}
	run.CatchUpPerSec = float64(run.CatchUpEvents) / elapsed.Seconds()

	steady, lastID, err := natsSteady(ctx, pool, meter, api, d, p)
	steady.CatchUpEvents, steady.CatchUpPerSec = run.CatchUpEvents, run.CatchUpPerSec
	run = steady
	if err != nil {
		return run, err
	}
	return run, natsResume(ctx, pool, q, meter, d, lastID, p, &run)
}

// natsSteady commits bench events at p.natsRate for p.natsPhase while
// p.natsStreams live streams of api are open (none when api is nil, the
// baseline), and reads the CPU of PostgreSQL and of api over the commits.
// It returns the id of the last event the streams got.
func natsSteady(ctx context.Context, pool *pgxpool.Pool, meter cpuMeter, api *serveProcess, d sseDialer, p plan) (NATSStreamRun, string, error) {
	var run NATSStreamRun
	n := p.natsStreams
	counts := make([]atomic.Int64, n)
	var lastID atomic.Value
	var streams *sseStreams
	if api != nil {
		g0, err := api.metric(ctx, "go_goroutines")
		if err != nil {
			return run, "", err
		}
		streams, err = d.open(ctx, "steady", n, func(i int, f sseFrame, _ time.Time) {
			counts[i].Add(1)
			if i == 0 {
				lastID.Store(f.id)
			}
		})
		if err != nil {
			return run, "", err
		}
		defer streams.close()
		d.prog.set("SSE: %d clients connected, waiting for the server to show them", n)
		if err := waitMetric(ctx, api, "go_goroutines", func(v float64) bool { return v >= g0+float64(n) }, sseSettleTimeout); err != nil {
			return run, "", fmt.Errorf("server goroutines with %d streams open: %w", n, err)
		}
	}
	var events atomic.Int64
	stop := d.prog.tick(fmt.Sprintf("NATS: %d events/s to %d streams", p.natsRate, n), p.natsPhase)
	c0, a0 := meter.read(), processCPU(api)
	start := time.Now()
	rate, err := appendEvents(ctx, pool, 2, p.natsRate, p.natsPhase, p.maxOpsPerRun, func(string, time.Time) { events.Add(1) })
	c1, a1, elapsed := meter.read(), processCPU(api), time.Since(start)
	stop()
	if err != nil {
		return run, "", err
	}
	if !c0.serverOK || !c1.serverOK {
		return run, "", errors.New("the PostgreSQL server's CPU could not be read")
	}
	run.Events, run.AchievedRate = int(events.Load()), rate
	run.ServerCPUMsPerSec = float64((c1.server - c0.server).Milliseconds()) / elapsed.Seconds()
	run.APICPUMsPerSec = float64((a1 - a0).Milliseconds()) / elapsed.Seconds()
	if api == nil {
		return run, "", nil
	}
	deadline := time.Now().Add(sseDeliveryTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		all := true
		for i := range counts {
			all = all && counts[i].Load() >= int64(run.Events)
		}
		if all {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	run.Ended = streams.close()
	for i := range counts {
		run.Seen += counts[i].Load()
	}
	id, _ := lastID.Load().(string)
	if run.Seen == 0 || id == "" {
		return run, "", fmt.Errorf("no stream received any of %d events", run.Events)
	}
	return run, id, nil
}

// natsResume commits p.natsResumeEvents while no stream is open, then
// reopens p.natsStreams streams with Last-Event-ID lastID and reads
// PostgreSQL's CPU until every one has the events it missed.
func natsResume(ctx context.Context, pool *pgxpool.Pool, q *db.Queries, meter cpuMeter, d sseDialer, lastID string, p plan, run *NATSStreamRun) error {
	if _, err := appendEvents(ctx, pool, 1, 0, time.Minute, p.natsResumeEvents, nil); err != nil {
		return err
	}
	log, _, err := drainOutbox(ctx, pool)
	if err != nil {
		return err
	}
	if err := waitSinkAt(ctx, q, log.last()); err != nil {
		return err
	}
	n := p.natsStreams
	counts := make([]atomic.Int64, n)
	var reached atomic.Int64
	d.lastEventID = lastID
	c0, start := meter.read(), time.Now()
	streams, err := d.open(ctx, "resume", n, func(i int, _ sseFrame, _ time.Time) {
		if counts[i].Add(1) == int64(p.natsResumeEvents) {
			reached.Add(1)
		}
	})
	if err != nil {
		return err
	}
	defer streams.close()
	deadline := time.Now().Add(sseDeliveryTimeout)
	for reached.Load() < int64(n) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	c1, elapsed := meter.read(), time.Since(start)
	for i := range counts {
		run.ResumeSeen += counts[i].Load()
	}
	if reached.Load() < int64(n) {
		return fmt.Errorf("resume: %d of %d streams got the %d events they missed", reached.Load(), n, p.natsResumeEvents)
	}
	run.ResumeSeconds = elapsed.Seconds()
	run.ResumeServerCPUMs = float64((c1.server - c0.server).Milliseconds())
	run.ResumeServerCPUMsPer1000 = run.ResumeServerCPUMs / (float64(n) / 1000)
	return nil
}

// waitSinkAt waits until the JetStream sink's cursor is at or past pos.
func waitSinkAt(ctx context.Context, q *db.Queries, pos outbox.Position) error {
	deadline := time.Now().Add(natsSinkTimeout)
	for {
		cur, err := outbox.CursorOf(ctx, q, natsink.SinkID)
		if err == nil && !cur.Less(pos) {
			return nil
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the JetStream sink is at %s, not at %s, after %s", cur, pos, natsSinkTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// processCPU is the CPU time p has used so far (0 for nil or unreadable).
func processCPU(p *serveProcess) time.Duration {
	if p == nil {
		return 0
	}
	st, err := readStat(p.Pid())
	if err != nil {
		return 0
	}
	return time.Duration(st.utime+st.stime) * time.Second / clockTicks
}

// ratios are the suite's headline figures, when it ran.
func (r NATSResult) ratios() []Ratio {
	var out []Ratio
	// A ratio needs both sides measured; a numerator may be 0 (no CPU
	// tick of PostgreSQL's at all), a denominator may not.
	add := func(name, num, den string, a, b float64, measured bool) {
		if measured && a >= 0 && b > 0 {
			out = append(out, Ratio{Name: name, Value: a / b, Numerator: num, Denominator: den})
		}
	}
	add("events/s through JetStream ÷ direct (sink forward ÷ outbox drain, same backlog)",
		fmt.Sprintf("JetStream sink, %d-event backlog", r.Backlog), "outbox.ReadAfter drain", r.ForwardPerSec, r.DrainPerSec,
		r.ForwardPerSec > 0)
	js, pg := r.JetStream, r.Postgres
	add("SSE catch-up events/s, from JetStream ÷ from PostgreSQL", "COMPUTE_STREAM_SOURCE=nats", "postgres",
		js.CatchUpPerSec, pg.CatchUpPerSec, js.CatchUpPerSec > 0)
	add(fmt.Sprintf("PostgreSQL CPU with %d streams at %d events/s, JetStream ÷ PostgreSQL source", r.Streams, r.Rate),
		"COMPUTE_STREAM_SOURCE=nats", "postgres", js.ServerCPUMsPerSec, pg.ServerCPUMsPerSec, js.Events > 0)
	add(fmt.Sprintf("PostgreSQL CPU for %d streams resuming, JetStream ÷ PostgreSQL source", r.Streams),
		"COMPUTE_STREAM_SOURCE=nats", "postgres", js.ResumeServerCPUMs, pg.ResumeServerCPUMs, js.ResumeSeconds > 0)
	return out
}

// print writes the suite's lines of the summary table.
func (r NATSResult) print(w io.Writer) {
	if r.Backlog == 0 || r.DrainPerSec == 0 {
		return
	}
	fmt.Fprintf(w, "\nNATS  %s, file storage; 1 compute serve --roles dispatcher with the JetStream sink\n", r.ServerVersion)
	fmt.Fprintf(w, "      backlog of %d events: JetStream sink forwards %.0f events/s; outbox reader drains %.0f events/s\n",
		r.Backlog, r.ForwardPerSec, r.DrainPerSec)
	if r.Baseline.Events == 0 {
		return
	}
	fmt.Fprintf(w, "      SSE: 1 API process, %d streams, %d events/s for %.0f s; then every stream resumes %d events behind\n",
		r.Streams, r.Rate, r.PhaseSeconds, r.ResumeEvents)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "      SOURCE\tCATCH-UP ev/s\tEVENTS\tSEEN\tPG CPU ms/s\t− BASELINE per 1k streams\tAPI CPU ms/s\tRESUME s\tRESUME PG CPU ms\tper 1k streams")
	fmt.Fprintf(tw, "      (no API)\t\t%d\t\t%.1f\t\t\t\t\t\n", r.Baseline.Events, r.Baseline.ServerCPUMsPerSec)
	for _, run := range []NATSStreamRun{r.Postgres, r.JetStream} {
		if run.Source == "" {
			continue
		}
		fmt.Fprintf(tw, "      %s\t%.0f\t%d\t%d/%d\t%.1f\t%.2f\t%.1f\t%.2f\t%.0f\t%.1f\n", run.Source, run.CatchUpPerSec, run.Events,
			run.Seen, int64(run.Events)*int64(r.Streams), run.ServerCPUMsPerSec, run.ServerCPUMsPerSecPer1000, run.APICPUMsPerSec,
			run.ResumeSeconds, run.ResumeServerCPUMs, run.ResumeServerCPUMsPer1000)
	}
	tw.Flush()
}

// waitFrontier returns once every transaction committed before it was
// called is below the outbox readers' frontier (bounded: a minute).
func waitFrontier(ctx context.Context, q *benchdb.Queries) error {
	next, err := q.BenchNextTxid(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		passed, err := q.BenchFrontierPassed(ctx, next)
		if err != nil || passed {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the outbox frontier did not pass the events just committed: %w", ctx.Err())
		case <-tick.C:
		}
	}
}
