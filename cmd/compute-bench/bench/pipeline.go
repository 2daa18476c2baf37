package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/webhook"
)

const (
	// pipelinePollInterval is the default COMPUTE_POLL_INTERVAL, which the
	// pipeline's `compute serve` keeps: the dispatchers are woken by LISTEN
	// pokes, the worker by the webhook sink after each batch it enqueued
	// and again at once after a full batch, so the interval is only the
	// fallback when a poke is lost.
	pipelinePollInterval = time.Second
	// drainTimeout bounds the wait for every event to be delivered, after
	// the setup and after the load.
	drainTimeout = 120 * time.Second
	// lagSampleEvery is how often the checkpoint sampler reads the outbox
	// head and the sinks' cursors.
	lagSampleEvery = 50 * time.Millisecond
	// readBackEvery: one booked create in this many is read back with
	// minPosition.
	readBackEvery = 10
)

// PipelineResult is issue 6 item 5: webhook deliveries per second to a
// local receiver divided by events per second under HTTP load, the
// commit → delivery latency, and how far the projections trail the log.
type PipelineResult struct {
	Nodes          int         `json:"nodes"`
	Tenants        int         `json:"tenants"`
	PollIntervalMs float64     `json:"pollIntervalMs"`
	Load           HTTPLoadRun `json:"load"`
	// Events are the bench tenants' events committed during the load (all
	// of them come from its commands); EventsByType splits them.
	Events       int64            `json:"events"`
	EventsByType map[string]int64 `json:"eventsByType"`
	EventsPerSec float64          `json:"eventsPerSec"`
	// DeliveredInWindow counts those events whose first delivery arrived
	// before the load ended (unique webhook-id).
	DeliveredInWindow int64   `json:"deliveredInWindow"`
	DeliveriesPerSec  float64 `json:"deliveriesPerSec"`
	DeliveryRatio     float64 `json:"deliveriesPerSecOverEventsPerSec"`
	// Commit → delivery: from the client's answer to the command that wrote
	// the event (matched by the event's transaction id) to the receiver's
	// first POST with the event's id.
	LatencySamples int     `json:"commitToDeliverySamples"`
	DeliveryP50Ms  float64 `json:"commitToDeliveryP50Ms"`
	DeliveryP99Ms  float64 `json:"commitToDeliveryP99Ms"`
	// Received counts every POST (setup and load); Duplicates those whose
	// webhook-id had arrived before; BadSignatures those webhook.VerifyAt
	// refused.
	Received      int64 `json:"received"`
	Duplicates    int64 `json:"duplicates"`
	BadSignatures int64 `json:"badSignatures"`
	// DrainSeconds is from the end of the load until every event of it had
	// arrived (bounded by drainTimeout); Undelivered is what had not then.
	DrainSeconds float64 `json:"drainSeconds"`
	Undelivered  int64   `json:"undelivered"`
	// DrainPerSec is the delivery rate after the load: the events still
	// to deliver when it ended ÷ DrainSeconds.
	DrainPerSec float64 `json:"drainDeliveriesPerSec"`
	// Projection lag a client sees: create answered → GET with its
	// position as minPosition answered, for one booked create in 10.
	ProjectionLagSamples int     `json:"projectionLagSamples"`
	ProjectionLagP50Ms   float64 `json:"projectionLagP50Ms"`
	ProjectionLagP99Ms   float64 `json:"projectionLagP99Ms"`
	// CheckpointLag is, per sink, how long after an event was the visible
	// head of the log its cursor had passed it (sampled every 50 ms).
	CheckpointLag []CheckpointLag `json:"checkpointLag"`
}

// CheckpointLag is one sink's cursor lag behind the log head under load.
type CheckpointLag struct {
	Sink    string  `json:"sink"`
	Samples int     `json:"samples"`
	P50Ms   float64 `json:"p50Ms"`
	P99Ms   float64 `json:"p99Ms"`
}

// pipelineNodes is a modest fleet: the pipeline measures the log, not
// placement.
func pipelineNodes(p plan) int { return min(100, p.scaleNodes[len(p.scaleNodes)-1]) }

// pipelineSuite prepares the database at url (tenants, fleet, one webhook
// endpoint per tenant at a local receiver, all before the dispatcher runs,
// so every tenant event from the endpoints on is delivered), starts one
// `compute serve` with the
// api, worker and dispatcher roles, waits for the setup's events to arrive,
// then runs the HTTP load and measures.
func pipelineSuite(ctx context.Context, url string, p plan, binary string, prog *progress) (PipelineResult, error) {
	app, load, err := httpFleet(ctx, url, p, prog)
	if err != nil {
		return PipelineResult{}, err
	}
	defer app.close()
	defer load.close()
	res := PipelineResult{Nodes: app.nodes, Tenants: p.tenants, PollIntervalMs: float64(pipelinePollInterval.Milliseconds())}
	rcv := newReceiver()
	defer rcv.close()
	wh := webhook.New(app.pool, commands.New(app.pool, commands.Config{}), webhook.Config{AllowPrivate: true}, slog.New(slog.DiscardHandler))
	for _, t := range app.tenants {
		ep, err := wh.CreateEndpoint(ctx, operator, webhook.CreateEndpoint{Tenant: t, URL: rcv.srv.URL + "/hook/" + t,
			Description: "compute-bench receiver"})
		if err != nil {
			return res, fmt.Errorf("webhook endpoint of %s: %w", t, err)
		}
		rcv.setSecret(t, ep.Secret)
	}
	// An endpoint is sent the events that follow it in the log: the
	// tenants' setup before the first endpoint is nobody's to deliver.
	var first outbox.Position
	if err := app.pool.QueryRow(ctx, "SELECT min(created_txid) FROM webhook_endpoints").Scan(&first.TxID); err != nil {
		return res, fmt.Errorf("the endpoints' creation: %w", err)
	}
	q := db.New(app.pool)

	prog.set("pipeline: starting compute serve (api,worker,dispatcher)")
	proc, err := startServe(ctx, binary, url, "api,worker,dispatcher", "COMPUTE_POLL_INTERVAL="+pipelinePollInterval.String())
	if err != nil {
		return res, err
	}
	defer proc.stop()
	prog.set("pipeline: waiting for the worker's sinks to reach the log's head")
	took, err := waitSinksCaughtUp(ctx, q)
	if err != nil {
		return res, err
	}
	prog.set("pipeline: the worker's sinks reached the log's head in %.2f s", took.Seconds())
	// A short unmeasured run first: a fresh process opens its pool's
	// connections and prepares its statements on the first requests.
	prog.set("pipeline: warming up")
	warm := load.run(ctx, httpLoadSpec{urls: []string{proc.URL()}, clients: p.httpClients, phase: warmupFor(p.webhookPhase),
		maxOps: p.maxOpsPerRun})
	// Every endpoint existed before the dispatcher started, so every tenant
	// event since the first endpoint is delivered; the load's deliveries
	// must not queue behind them.
	setup, err := loadEvents(ctx, q, app.tenants, first, warm.commits)
	if err != nil {
		return res, err
	}
	if len(setup) == 0 {
		return res, fmt.Errorf("no tenant events after setup")
	}
	h0 := setup[len(setup)-1].pos
	prog.set("pipeline: delivering %d setup and warm-up events", len(setup))
	if missing, _ := rcv.waitFor(ctx, setup, drainTimeout); missing > 0 {
		return res, fmt.Errorf("%d of %d setup events not delivered within %s", missing, len(setup), drainTimeout)
	}

	sampler := startCheckpointSampler(ctx, q, projections.NameReservations, webhook.SinkID)
	stopTicker := prog.tick(fmt.Sprintf("pipeline: HTTP load, %d clients", p.httpClients), p.webhookPhase)
	run := load.run(ctx, httpLoadSpec{urls: []string{proc.URL()}, clients: p.httpClients, phase: p.webhookPhase,
		maxOps: p.maxOpsPerRun, readEvery: readBackEvery})
	loadEnd := time.Now()
	stopTicker()
	res.CheckpointLag = sampler.stop()
	res.Load = run
	if run.Booked == 0 {
		return res, fmt.Errorf("no reservation booked over HTTP in %.1fs (errors: %v, pending: %d)", run.Seconds, run.Errors, run.Pending)
	}

	evs, err := loadEvents(ctx, q, app.tenants, h0, run.commits)
	if err != nil {
		return res, err
	}
	prog.set("pipeline: waiting for %d events to be delivered", len(evs))
	missing, lastAt := rcv.waitFor(ctx, evs, drainTimeout)
	res.Undelivered = int64(missing)
	res.DrainSeconds = max(0, lastAt.Sub(loadEnd).Seconds())
	if missing > 0 {
		res.DrainSeconds = drainTimeout.Seconds()
	}
	res.fill(evs, run, rcv, loadEnd)
	if res.DrainSeconds > 0 {
		res.DrainPerSec = float64(res.Events-res.Undelivered-res.DeliveredInWindow) / res.DrainSeconds
	}
	return res, nil
}

// fill derives the rates and latencies from the load's events and what
// the receiver got.
func (res *PipelineResult) fill(evs []tenantEvent, run HTTPLoadRun, rcv *receiver, loadEnd time.Time) {
	answered := make(map[uint64]time.Time, len(run.commits))
	for _, c := range run.commits {
		answered[c.txid] = c.at
	}
	first, received, dups, bad := rcv.summary()
	res.Received, res.Duplicates, res.BadSignatures = received, dups, bad
	res.Events = int64(len(evs))
	res.EventsByType = map[string]int64{}
	var lat []time.Duration
	for _, e := range evs {
		res.EventsByType[e.typ]++
		at, ok := first[e.id]
		if !ok {
			continue
		}
		if !at.After(loadEnd) {
			res.DeliveredInWindow++
		}
		if c, ok := answered[e.pos.TxID]; ok {
			lat = append(lat, max(0, at.Sub(c)))
		}
	}
	res.EventsPerSec = float64(res.Events) / run.Seconds
	res.DeliveriesPerSec = float64(res.DeliveredInWindow) / run.Seconds
	if res.EventsPerSec > 0 {
		res.DeliveryRatio = res.DeliveriesPerSec / res.EventsPerSec
	}
	res.LatencySamples = len(lat)
	res.DeliveryP50Ms, res.DeliveryP99Ms = percentileMs(lat, 0.50), percentileMs(lat, 0.99)
	res.ProjectionLagSamples = len(run.lagSample)
	res.ProjectionLagP50Ms, res.ProjectionLagP99Ms = percentileMs(run.lagSample, 0.50), percentileMs(run.lagSample, 0.99)
}

// warmupFor is the unmeasured run before a measured one of length phase.
func warmupFor(phase time.Duration) time.Duration { return min(time.Second, phase/2) }

// tenantEvent is one outbox row of a bench tenant.
type tenantEvent struct {
	id  string
	pos outbox.Position
	typ string
}

// tenantEvents lists the visible events of tenants after position after,
// in log order, with the keyset query the event API uses.
func tenantEvents(ctx context.Context, q *db.Queries, tenants []string, after outbox.Position) ([]tenantEvent, error) {
	want := map[string]bool{}
	for _, t := range tenants {
		want[t] = true
	}
	var out []tenantEvent
	for {
		rows, err := q.OutboxReadAfterOfTypes(ctx, db.OutboxReadAfterOfTypesParams{AfterTxid: after.TxID, AfterSeq: after.Seq,
			Types: []string{}, MaxRows: 1000})
		if err != nil {
			return nil, fmt.Errorf("read outbox: %w", err)
		}
		for _, r := range rows {
			after = outbox.Position{TxID: r.Txid, Seq: r.Seq}
			if r.TenantID != nil && want[*r.TenantID] {
				out = append(out, tenantEvent{id: r.ID.String(), pos: after, typ: r.Type})
			}
		}
		if len(rows) < 1000 {
			return out, nil
		}
	}
}

// loadEvents lists the load's events: the tenants' events after h0, read
// again until every transaction a command answered for is visible (an
// unrelated open transaction can hold the reader's frontier back briefly).
func loadEvents(ctx context.Context, q *db.Queries, tenants []string, h0 outbox.Position, commits []commitMark) ([]tenantEvent, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		evs, err := tenantEvents(ctx, q, tenants, h0)
		if err != nil {
			return nil, err
		}
		seen := map[uint64]bool{}
		for _, e := range evs {
			seen[e.pos.TxID] = true
		}
		missing := 0
		for _, c := range commits {
			if !seen[c.txid] {
				missing++
			}
		}
		if missing == 0 {
			return evs, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%d answered commands have no visible event: %w", missing, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkpointSampler reads the visible head of the log and the cursors of
// some sinks every lagSampleEvery; a head read at t is passed by a sink at
// the first reading where its cursor is at or beyond it.
type checkpointSampler struct {
	stopped chan struct{}
	done    chan []CheckpointLag
}

func startCheckpointSampler(ctx context.Context, q *db.Queries, sinks ...string) *checkpointSampler {
	s := &checkpointSampler{stopped: make(chan struct{}), done: make(chan []CheckpointLag, 1)}
	go func() {
		type mark struct {
			at   time.Time
			head outbox.Position
		}
		pending := make([][]mark, len(sinks))
		lags := make([][]time.Duration, len(sinks))
		tick := time.NewTicker(lagSampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-s.stopped:
			case <-ctx.Done():
			case <-tick.C:
				now := time.Now()
				heads, err := q.OutboxHeadPosition(ctx)
				if err != nil || len(heads) == 0 {
					continue
				}
				head := outbox.Position{TxID: heads[0].Txid, Seq: heads[0].Seq}
				for i, sink := range sinks {
					pending[i] = append(pending[i], mark{at: now, head: head})
					cur, err := outbox.CursorOf(ctx, q, sink)
					if err != nil {
						continue
					}
					n := 0
					for n < len(pending[i]) && !cur.Less(pending[i][n].head) {
						lags[i] = append(lags[i], time.Since(pending[i][n].at))
						n++
					}
					pending[i] = pending[i][n:]
				}
				continue
			}
			out := make([]CheckpointLag, len(sinks))
			for i, sink := range sinks {
				out[i] = CheckpointLag{Sink: sink, Samples: len(lags[i]), P50Ms: percentileMs(lags[i], 0.50), P99Ms: percentileMs(lags[i], 0.99)}
			}
			s.done <- out
			return
		}
	}()
	return s
}

func (s *checkpointSampler) stop() []CheckpointLag {
	close(s.stopped)
	return <-s.done
}

// eventTypes lists the keys of a count map in order, for printing.
func eventTypes(m map[string]int64) []string { return slices.Sorted(maps.Keys(m)) }

// ratios are the pipeline's headline figures: delivery throughput against
// event throughput during the load, and the share of events delivered at
// all once the load stopped.
func (r PipelineResult) ratios() []Ratio {
	var out []Ratio
	if r.EventsPerSec > 0 {
		out = append(out, Ratio{Name: "webhook deliveries/s ÷ events/s, under HTTP load", Value: r.DeliveryRatio,
			Numerator:   fmt.Sprintf("unique deliveries/s to a local receiver (poll %.0f ms)", r.PollIntervalMs),
			Denominator: fmt.Sprintf("tenant events/s committed, c%d", r.Load.Clients)})
	}
	if r.Events > 0 {
		out = append(out, Ratio{Name: "webhook events delivered ÷ committed, after drain", Value: float64(r.Events-r.Undelivered) / float64(r.Events),
			Numerator: "events delivered", Denominator: "events committed"})
	}
	return out
}

// print writes the pipeline figures.
func (r PipelineResult) print(w io.Writer) {
	l := r.Load
	fmt.Fprintf(w, "\nPIPELINE  1 compute serve (api,worker,dispatcher, poll %.0f ms), %d clients, %d nodes, %d tenants\n",
		r.PollIntervalMs, l.Clients, r.Nodes, r.Tenants)
	fmt.Fprintf(w, "          load: %.0f reservations/s over %.1f s, create p50 %.2f ms p99 %.2f ms, errors %s\n",
		l.PerSec, l.Seconds, l.P50Ms, l.P99Ms, errorsString(l.Errors))
	var types []string
	for _, t := range eventTypes(r.EventsByType) {
		types = append(types, fmt.Sprintf("%s=%d", t, r.EventsByType[t]))
	}
	fmt.Fprintf(w, "          events: %d (%.0f/s; %s)\n", r.Events, r.EventsPerSec, strings.Join(types, ", "))
	fmt.Fprintf(w, "          webhooks: %.0f deliveries/s in the window (ratio %.3f); commit → delivery p50 %.1f ms, p99 %.1f ms (%d samples)\n",
		r.DeliveriesPerSec, r.DeliveryRatio, r.DeliveryP50Ms, r.DeliveryP99Ms, r.LatencySamples)
	fmt.Fprintf(w, "          drained %.1f s after the load (%.0f deliveries/s); undelivered %d, duplicates %d of %d POSTs, bad signatures %d\n",
		r.DrainSeconds, r.DrainPerSec, r.Undelivered, r.Duplicates, r.Received, r.BadSignatures)
	fmt.Fprintf(w, "          read-your-writes (GET ?minPosition): p50 %.1f ms, p99 %.1f ms (%d samples)\n",
		r.ProjectionLagP50Ms, r.ProjectionLagP99Ms, r.ProjectionLagSamples)
	for _, c := range r.CheckpointLag {
		fmt.Fprintf(w, "          cursor of %s behind the log head: p50 %.0f ms, p99 %.0f ms (%d samples, 50 ms resolution)\n",
			c.Sink, c.P50Ms, c.P99Ms, c.Samples)
	}
}
