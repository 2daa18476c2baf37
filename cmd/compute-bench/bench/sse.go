package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/migrate"
	"github.com/bettercompute/compute/outbox"
)

// Bounds of the SSE measurements: every wait below ends by one of these.
const (
	sseLatencyClients  = 10               // streams of the commit → client run
	sseDialParallel    = 100              // streams being opened at once
	sseDeliveryTimeout = 10 * time.Second // for the last events to arrive
	sseSettleTimeout   = 30 * time.Second // for the server to show (or drop) the streams
	// sseLeftoverGoroutines is the slack allowed for the server's own
	// transient goroutines (pool health checks, the /metrics connection).
	sseLeftoverGoroutines = 5
)

// SSEResult is the end-to-end event stream against one `compute serve`
// (api role): how soon a committed event reaches a stream client, and what
// each idle stream costs the server in memory and goroutines, with the
// time one event takes to reach every one of them.
type SSEResult struct {
	// Commit → client: Clients streams read every event appended at
	// TargetRate; latency runs from the writer's commit returning to the
	// client reading the frame's end. Seen sums over the clients, so every
	// event reaching every client is Seen == Events × Clients.
	Clients       int     `json:"latencyClients"`
	TargetRate    int     `json:"targetEventsPerSec"`
	AchievedRate  float64 `json:"achievedEventsPerSec"`
	Events        int     `json:"events"`
	Seen          int     `json:"seen"`
	SeenPerClient []int   `json:"seenPerClient"`
	Missed        int     `json:"missed"`
	Duplicates    int     `json:"duplicates"`
	OutOfOrder    int     `json:"outOfOrder"`
	Unexpected    int     `json:"unexpected"` // frames that are none of the appended events
	Ended         int     `json:"endedEarly"` // streams the server ended during the run
	P50Ms         float64 `json:"commitToClientP50Ms"`
	P99Ms         float64 `json:"commitToClientP99Ms"`

	// Fan-out: FanoutClients idle streams held open at once. Per-client
	// figures are (after − before) / FanoutClients, read from the
	// server's /proc status and /metrics.
	FanoutClients      int     `json:"fanoutClients"`
	ConnectSeconds     float64 `json:"connectSeconds"`
	RSSBeforeBytes     int64   `json:"rssBeforeBytes"`
	RSSAfterBytes      int64   `json:"rssAfterBytes"`
	RSSAfterCloseBytes int64   `json:"rssAfterCloseBytes"`
	// GoroutinesAfterClose is read once the server is back within
	// sseLeftoverGoroutines of GoroutinesBefore, or after sseSettleTimeout:
	// a figure well above GoroutinesBefore is a leak.
	GoroutinesAfterClose float64 `json:"goroutinesAfterClose"`
	HeapBeforeBytes      float64 `json:"heapInuseBeforeBytes"`
	HeapAfterBytes       float64 `json:"heapInuseAfterBytes"`
	GoroutinesBefore     float64 `json:"goroutinesBefore"`
	GoroutinesAfter      float64 `json:"goroutinesAfter"`
	RSSPerClient         float64 `json:"rssBytesPerClient"`
	HeapPerClient        float64 `json:"heapInuseBytesPerClient"`
	GoroutinesPerClient  float64 `json:"goroutinesPerClient"`
	// Broadcast: one event appended while the FanoutClients are open, from
	// its commit to each client reading it.
	BroadcastReached int     `json:"broadcastReached"`
	BroadcastP50Ms   float64 `json:"broadcastP50Ms"`
	BroadcastP99Ms   float64 `json:"broadcastP99Ms"`
	BroadcastMaxMs   float64 `json:"broadcastMaxMs"`
}

func sseSuite(ctx context.Context, url string, p plan, binary string, prog *progress) (SSEResult, error) {
	pool, err := pg.Connect(ctx, url, pg.PoolOptions{MaxConns: 6, IdleInTxTimeout: time.Minute, ApplicationName: "compute-bench-sse"})
	if err != nil {
		return SSEResult{}, err
	}
	defer pool.Close()
	if err := migrate.Up(ctx, pool); err != nil {
		return SSEResult{}, err
	}
	tok, err := (&commands.Tokens{Pool: pool}).CreateToken(ctx, operator, "bench", "bench", core.RoleMember)
	if err != nil {
		return SSEResult{}, err
	}
	prog.set("SSE: starting compute serve")
	// Every stream is the one bench token's, in one tenant: lift the
	// per-token and per-tenant stream caps and the connection cap above
	// what the run opens, so the figures are the server's, not its limits.
	streams := sseLatencyClients + p.sseClients
	proc, err := startServe(ctx, binary, url, "api",
		fmt.Sprintf("COMPUTE_STREAMS_PER_TOKEN=%d", streams), fmt.Sprintf("COMPUTE_STREAMS_PER_TENANT=%d", streams),
		fmt.Sprintf("COMPUTE_HTTP_MAX_CONNS=%d", streams+100))
	if err != nil {
		return SSEResult{}, err
	}
	defer proc.stop()

	// One transport for every stream: each holds its own TCP connection
	// to the loopback server, so the per-host limit must stay unlimited.
	tr := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxConnsPerHost:       0,
		ResponseHeaderTimeout: sseSettleTimeout,
		DisableCompression:    true,
	}
	defer tr.CloseIdleConnections()
	d := sseDialer{client: &http.Client{Transport: tr}, url: proc.URL(), token: tok.Secret, prog: prog}

	res := SSEResult{Clients: sseLatencyClients, TargetRate: p.sseRate, FanoutClients: p.sseClients}
	g0, err := proc.metric(ctx, "go_goroutines")
	if err != nil {
		return res, err
	}
	if err := sseLatency(ctx, pool, d, p, &res); err != nil {
		return res, err
	}
	// The fan-out baseline is the server without the latency streams.
	_ = waitMetric(ctx, proc, "go_goroutines", func(v float64) bool { return v <= g0 }, sseSettleTimeout)
	return res, sseFanout(ctx, pool, proc, d, p, &res)
}

// sseLatency appends at p.sseRate for p.ssePhase while sseLatencyClients
// streams read, and checks that each client saw every event once, in log
// order.
func sseLatency(ctx context.Context, pool *pgxpool.Pool, d sseDialer, p plan, res *SSEResult) error {
	type recv struct {
		subject string
		pos     outbox.Position
		at      time.Time
	}
	got := make([][]recv, sseLatencyClients) // each written only by its client's reader
	counts := make([]atomic.Int64, sseLatencyClients)
	var unparsable atomic.Int64
	streams, err := d.open(ctx, "commit → client", sseLatencyClients, func(i int, f sseFrame, at time.Time) {
		var env struct {
			Subject string `json:"subject"`
		}
		pos, perr := outbox.ParsePosition(f.id)
		if perr != nil || json.Unmarshal([]byte(f.data), &env) != nil {
			unparsable.Add(1)
			return
		}
		got[i] = append(got[i], recv{subject: env.Subject, pos: pos, at: at})
		counts[i].Add(1)
	})
	if err != nil {
		return err
	}
	defer streams.close()

	var mu sync.Mutex
	acked := map[string]time.Time{}
	onCommit := func(subject string, at time.Time) { mu.Lock(); acked[subject] = at; mu.Unlock() }
	stop := d.prog.tick(fmt.Sprintf("SSE: commit → %d clients at %d events/s", sseLatencyClients, p.sseRate), p.ssePhase)
	res.AchievedRate, err = appendEvents(ctx, pool, 4, p.sseRate, p.ssePhase, p.maxOpsPerRun, onCommit)
	stop()
	if err != nil {
		return err
	}
	res.Events = len(acked)
	deadline := time.Now().Add(sseDeliveryTimeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		all := true
		for i := range counts {
			all = all && counts[i].Load() >= int64(res.Events)
		}
		if all {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	res.Ended = streams.close() // after this no reader appends to got
	res.Unexpected = int(unparsable.Load())

	var lat []time.Duration
	for _, frames := range got {
		seen := map[string]bool{}
		var last outbox.Position
		for _, r := range frames {
			commit, ok := acked[r.subject]
			switch {
			case !ok:
				res.Unexpected++
				continue
			case seen[r.subject]:
				res.Duplicates++
				continue
			}
			if !last.Less(r.pos) {
				res.OutOfOrder++
			}
			last = r.pos
			seen[r.subject] = true
			lat = append(lat, max(0, r.at.Sub(commit)))
		}
		res.SeenPerClient = append(res.SeenPerClient, len(seen))
		res.Seen += len(seen)
		res.Missed += res.Events - len(seen)
	}
	if res.Seen == 0 {
		return fmt.Errorf("no SSE client saw any of %d events", res.Events)
	}
	res.P50Ms, res.P99Ms = percentileMs(lat, 0.50), percentileMs(lat, 0.99)
	return nil
}

// sseFanout holds p.sseClients idle streams open, reads what they cost the
// server, then times one event reaching all of them.
func sseFanout(ctx context.Context, pool *pgxpool.Pool, proc *serveProcess, d sseDialer, p plan, res *SSEResult) error {
	before, err := readServerMemory(ctx, proc)
	if err != nil {
		return err
	}
	res.RSSBeforeBytes, res.HeapBeforeBytes, res.GoroutinesBefore = before.rss, before.heap, before.goroutines

	n := p.sseClients
	recvAt := make([]atomic.Int64, n) // unix ns of the first event, 0 until then
	var reached atomic.Int64
	t0 := time.Now()
	streams, err := d.open(ctx, "fan-out", n, func(i int, _ sseFrame, at time.Time) {
		if recvAt[i].CompareAndSwap(0, at.UnixNano()) {
			reached.Add(1)
		}
	})
	if err != nil {
		return err
	}
	defer streams.close()
	res.ConnectSeconds = time.Since(t0).Seconds()
	// Each stream is at least one goroutine of the server's (net/http
	// serves the handler on the connection's goroutine).
	d.prog.set("SSE: %d clients connected, waiting for the server to show them", n)
	want := before.goroutines + float64(n)
	if err := waitMetric(ctx, proc, "go_goroutines", func(v float64) bool { return v >= want }, sseSettleTimeout); err != nil {
		return fmt.Errorf("server goroutines with %d streams open: %w", n, err)
	}
	after, err := readServerMemory(ctx, proc)
	if err != nil {
		return err
	}
	res.RSSAfterBytes, res.HeapAfterBytes, res.GoroutinesAfter = after.rss, after.heap, after.goroutines
	res.RSSPerClient = float64(after.rss-before.rss) / float64(n)
	res.HeapPerClient = (after.heap - before.heap) / float64(n)
	res.GoroutinesPerClient = (after.goroutines - before.goroutines) / float64(n)

	d.prog.set("SSE: one event to %d clients", n)
	var commit atomic.Int64
	if _, err := appendEvents(ctx, pool, 1, 0, time.Minute, 1, func(_ string, at time.Time) { commit.Store(at.UnixNano()) }); err != nil {
		return err
	}
	deadline := time.Now().Add(sseDeliveryTimeout)
	for reached.Load() < int64(n) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	res.Ended = max(res.Ended, streams.close())
	var lat []time.Duration
	for i := range recvAt {
		if at := recvAt[i].Load(); at != 0 {
			lat = append(lat, max(0, time.Duration(at-commit.Load())))
		}
	}
	res.BroadcastReached = len(lat)
	res.BroadcastP50Ms, res.BroadcastP99Ms, res.BroadcastMaxMs = percentileMs(lat, 0.50), percentileMs(lat, 0.99), percentileMs(lat, 1)

	// What the server keeps after the streams are gone: a figure, not a
	// failure, so a leak shows in the results instead of hiding them.
	_ = waitMetric(ctx, proc, "go_goroutines", func(v float64) bool { return v <= before.goroutines+sseLeftoverGoroutines }, sseSettleTimeout)
	closed, err := readServerMemory(ctx, proc)
	if err != nil {
		return err
	}
	res.RSSAfterCloseBytes, res.GoroutinesAfterClose = closed.rss, closed.goroutines
	return nil
}

type serverMemory struct {
	rss              int64
	heap, goroutines float64
}

func readServerMemory(ctx context.Context, proc *serveProcess) (serverMemory, error) {
	var m serverMemory
	var err error
	if m.rss, err = proc.rssBytes(); err != nil {
		return m, err
	}
	if m.heap, err = proc.metric(ctx, "go_memstats_heap_inuse_bytes"); err != nil {
		return m, err
	}
	m.goroutines, err = proc.metric(ctx, "go_goroutines")
	return m, err
}

// waitMetric polls a metric of proc until ok holds or timeout passes.
func waitMetric(ctx context.Context, proc *serveProcess, name string, ok func(float64) bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var v float64
	var err error
	for {
		if v, err = proc.metric(ctx, name); err == nil && ok(v) {
			return nil
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			if err == nil {
				err = fmt.Errorf("%s is %v after %s", name, v, timeout)
			}
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// print writes the SSE lines of the summary table.
func (s SSEResult) print(w io.Writer) {
	fmt.Fprintf(w, "\nSSE  commit → client (%d clients) at %d/s target, %.0f/s achieved: p50 %.2f ms, p99 %.2f ms (%d/%d events seen; missed %d, dup %d, out of order %d)\n",
		s.Clients, s.TargetRate, s.AchievedRate, s.P50Ms, s.P99Ms, s.Seen, s.Events*s.Clients, s.Missed, s.Duplicates, s.OutOfOrder)
	fmt.Fprintf(w, "     fan-out: %d idle clients (connected in %.1f s): +%.1f KiB RSS, +%.1f KiB heap in use, +%.2f goroutines per client\n",
		s.FanoutClients, s.ConnectSeconds, s.RSSPerClient/1024, s.HeapPerClient/1024, s.GoroutinesPerClient)
	fmt.Fprintf(w, "     one event reaches %d/%d clients: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
		s.BroadcastReached, s.FanoutClients, s.BroadcastP50Ms, s.BroadcastP99Ms, s.BroadcastMaxMs)
	fmt.Fprintf(w, "     server RSS %.0f MiB before, %.0f MiB with the clients, %.0f MiB after they closed; goroutines %.0f → %.0f → %.0f\n",
		float64(s.RSSBeforeBytes)/(1<<20), float64(s.RSSAfterBytes)/(1<<20), float64(s.RSSAfterCloseBytes)/(1<<20),
		s.GoroutinesBefore, s.GoroutinesAfter, s.GoroutinesAfterClose)
}
