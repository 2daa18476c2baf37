package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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
				if e.Type == benchEventType {
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
// A backlog forwarded before the cursor was first seen (a small one, on a
// fast spell) is timed from the child's start instead, its start-up
// included: a lower bound, not a failed measurement. The child keeps
// running for the rest of the suite.
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
	started := time.Now()
	disp, err := startServe(ctx, binary, url, "dispatcher", "COMPUTE_NATS_URL="+natsURL)
	if err != nil {
		return nil, 0, err
	}
	s, ok := <-samples
	if !ok {
		return disp, 0, fmt.Errorf("the JetStream sink did not forward %d events within %s", len(positions), natsForwardTimeout)
	}
	n, secs := index[last]-index[s[0].cur], s[1].at.Sub(s[0].at).Seconds()
	if n <= 0 { // all of it before the first sample
		n, secs = index[last], s[1].at.Sub(started).Seconds()
	}
	if n <= 0 || secs <= 0 {
		return disp, 0, fmt.Errorf("the JetStream sink forwarded the backlog faster than the cursor could be sampled (%d events)", len(positions))
	}
	return disp, float64(n) / secs, nil
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
