// The nats suite's SSE runs: one API process serving 1,000 streams from
// one source, steady then resuming, with PostgreSQL's CPU meanwhile.

package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/bettercompute/compute/internal/db"
	"github.com/jackc/pgx/v5/pgxpool"
)

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
