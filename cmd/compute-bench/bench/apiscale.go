package bench

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/bettercompute/compute/internal/db"
)

// APIScaleResult is "API throughput with 1, 2 and 4 API processes as a
// ratio to 1": the same HTTP reservation load spread round-robin over n
// `compute serve --roles api` processes on one database, with one
// worker,dispatcher process beside them throughout.
type APIScaleResult struct {
	Nodes   int `json:"nodes"`
	Clients int `json:"clients"`
	// MaxConnsPerProcess is COMPUTE_MAX_CONNS of each API process.
	MaxConnsPerProcess int           `json:"maxConnsPerProcess"`
	Runs               []APIScaleRun `json:"runs"`
}

// APIScaleRun is the load against one number of API processes.
type APIScaleRun struct {
	Processes int         `json:"processes"`
	Load      HTTPLoadRun `json:"load"`
	// PerSecRatioToOne is reservations/s ÷ that of one process (0 when the
	// one-process run is missing).
	PerSecRatioToOne float64 `json:"perSecRatioToOne"`
}

// apiMaxConns is each API process's pool: COMPUTE_MAX_CONNS's default, so
// that "one compute serve" is the server as shipped and n processes are n
// of them. Clients beyond it wait for a connection inside the process, as
// they do in production. A pool as large as the clients lets every request
// run its transaction at once, and on two cores that costs throughput and
// tail: 16 clients, quick runs on 4 December, 323 and 330 reservations/s
// with a pool of 20 (p99 111–114 ms), 344 and 358 with 6 (p99 38–40 ms).
// Four processes hold 24 connections plus the worker,dispatcher process's
// own, well under the private cluster's max_connections = 300.
const apiMaxConns = 6

// apiScaleSuite seeds the database at url, starts the worker,dispatcher
// process, and for each count in p.apiProcesses starts that many API
// processes, runs the load for p.apiPhase and stops them again.
func apiScaleSuite(ctx context.Context, url string, p plan, binary string, prog *progress) (APIScaleResult, error) {
	app, load, err := httpFleet(ctx, url, p, prog)
	if err != nil {
		return APIScaleResult{}, err
	}
	defer app.close()
	defer load.close()
	res := APIScaleResult{Nodes: app.nodes, Clients: p.httpClients, MaxConnsPerProcess: apiMaxConns}
	prog.set("api scale: starting the worker,dispatcher process")
	bg, err := startServe(ctx, binary, url, "worker,dispatcher")
	if err != nil {
		return res, err
	}
	defer bg.stop()
	var one float64
	for _, n := range p.apiProcesses {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		r, err := apiScaleRun(ctx, load, db.New(app.pool), url, p, binary, n, prog)
		if err != nil {
			return res, fmt.Errorf("%d API processes: %w", n, err)
		}
		if n == 1 {
			one = r.Load.PerSec
		}
		if one > 0 {
			r.PerSecRatioToOne = r.Load.PerSec / one
		}
		res.Runs = append(res.Runs, r)
	}
	return res, nil
}

func apiScaleRun(ctx context.Context, load *httpLoad, q *db.Queries, url string, p plan, binary string, n int, prog *progress) (APIScaleRun, error) {
	prog.set("api scale: starting %d API processes", n)
	var procs []*serveProcess
	defer func() {
		for _, pr := range procs {
			pr.stop()
		}
	}()
	var urls []string
	for range n {
		pr, err := startServe(ctx, binary, url, "api", fmt.Sprintf("COMPUTE_MAX_CONNS=%d", apiMaxConns))
		if err != nil {
			return APIScaleRun{}, err
		}
		procs = append(procs, pr)
		urls = append(urls, pr.URL())
	}
	// The worker replays the log when it starts, and may trail the last
	// run's load: let it reach the head before this run begins.
	prog.set("api scale: waiting for the worker's sinks to reach the log's head")
	took, err := waitSinksCaughtUp(ctx, q)
	if err != nil {
		return APIScaleRun{}, err
	}
	prog.set("api scale: the worker's sinks reached the log's head in %.2f s", took.Seconds())
	// Fresh processes open their pools and prepare statements on their
	// first requests: warm them up, unmeasured.
	load.run(ctx, httpLoadSpec{urls: urls, clients: p.httpClients, phase: warmupFor(p.apiPhase), maxOps: p.maxOpsPerRun})
	stopTicker := prog.tick(fmt.Sprintf("api scale: %d processes, %d clients", n, p.httpClients), p.apiPhase)
	run := load.run(ctx, httpLoadSpec{urls: urls, clients: p.httpClients, phase: p.apiPhase, maxOps: p.maxOpsPerRun})
	stopTicker()
	if run.Booked == 0 {
		return APIScaleRun{Processes: n, Load: run}, fmt.Errorf("no reservation booked in %.1fs (errors: %v, pending: %d)",
			run.Seconds, run.Errors, run.Pending)
	}
	return APIScaleRun{Processes: n, Load: run}, nil
}

// ratios are the headline figures: each process count's reservations/s
// divided by one process's.
func (r APIScaleResult) ratios() []Ratio {
	var out []Ratio
	for _, run := range r.Runs {
		if run.Processes == 1 || run.PerSecRatioToOne == 0 {
			continue
		}
		out = append(out, Ratio{Name: fmt.Sprintf("API reservations/s, %d ÷ 1 processes", run.Processes), Value: run.PerSecRatioToOne,
			Numerator: fmt.Sprintf("%d API processes, c%d", run.Processes, r.Clients), Denominator: fmt.Sprintf("1 API process, c%d", r.Clients)})
	}
	return out
}

// print writes the API-process table.
func (r APIScaleResult) print(w io.Writer) {
	fmt.Fprintf(w, "\nAPI PROCESSES  HTTP create+release, %d clients round-robin, %d nodes, COMPUTE_MAX_CONNS=%d each, + 1 worker,dispatcher process\n",
		r.Clients, r.Nodes, r.MaxConnsPerProcess)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROCESSES\tRES/s\t÷ 1\tp50 ms\tp99 ms\tBOOKED\tPENDING\tERRORS")
	for _, run := range r.Runs {
		l := run.Load
		fmt.Fprintf(tw, "%d\t%.0f\t%.2f\t%.2f\t%.2f\t%d\t%d\t%s\n", run.Processes, l.PerSec, run.PerSecRatioToOne,
			l.P50Ms, l.P99Ms, l.Booked, l.Pending, errorsString(l.Errors))
	}
	tw.Flush()
}
