package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// Defaults of DomainOptions.
const (
	// DefaultCacheFor is how long one read of the database serves scrapes:
	// however many scrapers there are, a process runs the domain queries
	// at most once per period.
	DefaultCacheFor = 5 * time.Second
	// DefaultRefreshTimeout bounds one read: a slow or unreachable
	// database costs a scrape at most this much.
	DefaultRefreshTimeout = 2 * time.Second
	// DefaultFinishedEvery is how often the finished reservations (kept for
	// ever, so a whole-table count) are counted again.
	DefaultFinishedEvery = time.Minute
	// DefaultMaxLagCount bounds the count of events a sink is behind: a
	// sink further behind reads as this many (its lag in seconds still
	// tells how far).
	DefaultMaxLagCount = 100_000
)

// staleAfter is how long the last good read is still served while reads
// fail; past it the domain series disappear rather than lie.
const staleAfter = time.Minute

// Webhook attempt outcomes, the outcome label of
// compute_webhook_attempts_total (see MetricsWebhookAttemptsAfter).
var webhookOutcomes = []string{"success", "http_4xx", "http_5xx", "http_other", "timeout", "connection_error"}

// Work-queue row states, the state label of compute_workqueue_depth.
const (
	workDue       = "due"       // due and waiting for a worker
	workRunning   = "running"   // claimed by a worker
	workScheduled = "scheduled" // not due yet
)

// DomainOptions tune a Domain; zero values mean the defaults.
type DomainOptions struct {
	CacheFor      time.Duration
	Timeout       time.Duration
	FinishedEvery time.Duration
	MaxLagCount   int64
	// Logger receives a warning when a read fails; nil means
	// slog.Default().
	Logger *slog.Logger
	// WallClock is the real clock the outbox frontier's age is measured
	// against (pg_stat_activity's xact_start is real time, not business
	// time); nil means time.Now. Tests set it.
	WallClock func() time.Time
}

// Domain is a prometheus.Collector of the fleet's state, read from the
// database when /metrics is scraped: a few small queries (sql/queries/
// metrics.sql) in one read-only transaction under a short timeout, cached
// for a few seconds so that scrapes cannot hammer the database.
//
// Its gauges describe the whole fleet, not this process: every process
// that serves /metrics exports the same values, so dashboards aggregate
// them with max, not sum. compute_webhook_attempts_total counts the
// attempts recorded fleet-wide since this process first read them (each
// process's counter starts at 0; rate() is what to read). An attempt whose
// transaction commits after a later-numbered one was read is missed: the
// counter is for rates and alerts, GET /v1/webhook-endpoints/{id}/attempts
// for the record.
type Domain struct {
	pool   *pgxpool.Pool
	opts   DomainOptions
	logger *slog.Logger

	// mu serialises reads: concurrent scrapes wait for one read.
	mu      sync.Mutex
	triedAt time.Time // the last read, good or not (wall clock)
	last    *domainSnapshot
	lastAt  time.Time
	// errors and refreshSeconds describe the reads themselves.
	errors         float64
	refreshSeconds float64
	// finished and finishedAt are the finished reservations by state, as
	// last counted.
	finished   map[string]int64
	finishedAt time.Time
	// hooks is the webhook attempt counter's state.
	hooks webhookCount
}

// webhookCount accumulates webhook attempts by outcome from lastID on.
type webhookCount struct {
	started bool
	lastID  int64
	totals  map[string]float64
}

// domainSnapshot is one read of the database.
type domainSnapshot struct {
	head         []db.MetricsOutboxHeadRow // zero or one row
	frontierLag  float64                   // seconds the oldest transaction with an xid has been open
	sinks        []db.MetricsOutboxSinkLagRow
	work         []db.MetricsWorkQueueRow
	leases       []db.MetricsLeasesHeldRow
	reservations map[string]int64
	nodes        map[string]int64
	webhooks     map[string]float64
}

var (
	descHeadTxID = prometheus.NewDesc(NameOutboxHeadTxID,
		"Transaction id of the newest event the outbox readers may see (the head of the log).", nil, nil)
	descHeadSeq = prometheus.NewDesc(NameOutboxHeadSeq,
		"Sequence number of the newest event the outbox readers may see; its rate is the event rate.", nil, nil)
	descHeadAge = prometheus.NewDesc(NameOutboxHeadAge,
		"Age of the newest visible event, in seconds of business time (compute_now()).", nil, nil)
	descSinkLagEvents = prometheus.NewDesc(NameOutboxSinkLagEvents,
		"Visible events after a durable sink's cursor, not yet delivered to it (counted up to 100,000 by default).", []string{"sink"}, nil)
	descSinkLagSeconds = prometheus.NewDesc(NameOutboxSinkLagSeconds,
		"Age of the oldest event a durable sink has not delivered yet, in seconds; 0 when it is caught up.", []string{"sink"}, nil)
	descFrontierLag = prometheus.NewDesc(NameOutboxFrontierLag,
		"How long the oldest running transaction with a transaction id, in any database of the cluster, has been open, in seconds of real time: "+
			"the events committed since it began are hidden from every sink until it ends; 0 when none is running.", nil, nil)
	descWorkDepth = prometheus.NewDesc(NameWorkQueueDepth,
		"Work-queue rows by kind and state: due (waiting for a worker), running (claimed), scheduled (not due yet).", []string{"kind", "state"}, nil)
	descWorkOldestDue = prometheus.NewDesc(NameWorkQueueOldestDueAge,
		"How long the oldest due, unclaimed work item of a kind has been due, in seconds; 0 when none waits.", []string{"kind"}, nil)
	descLeaseHeld = prometheus.NewDesc(NameLeaseHeld,
		"A lease currently held, not expired, with its holder (the owning process); always 1.", []string{"lease", "holder"}, nil)
	descLeaseEpoch = prometheus.NewDesc(NameLeaseEpoch,
		"Fencing epoch of a held lease; it grows by one at each takeover.", []string{"lease"}, nil)
	descReservations = prometheus.NewDesc(NameReservations,
		"Reservations by state (finished states are counted once a minute).", []string{"state"}, nil)
	descNodes = prometheus.NewDesc(NameNodes,
		"Nodes by liveness state.", []string{"state"}, nil)
	descWebhookAttempts = prometheus.NewDesc(NameWebhookAttempts,
		"Webhook delivery attempts recorded fleet-wide since this process started counting, by outcome.", []string{"outcome"}, nil)
	descRefreshErrors = prometheus.NewDesc(NameDomainRefreshErrors,
		"Reads of the domain metrics that failed (database unreachable, timeout); the last good values are served for up to a minute.", nil, nil)
	descRefreshSeconds = prometheus.NewDesc(NameDomainRefreshSeconds,
		"Duration of the last read of the domain metrics from the database, in seconds.", nil, nil)
)

// NewDomain returns the collector of the fleet's state in pool's database.
// Register it on the registry /metrics serves.
func NewDomain(pool *pgxpool.Pool, opts DomainOptions) *Domain {
	if opts.CacheFor <= 0 {
		opts.CacheFor = DefaultCacheFor
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultRefreshTimeout
	}
	if opts.FinishedEvery <= 0 {
		opts.FinishedEvery = DefaultFinishedEvery
	}
	if opts.MaxLagCount <= 0 {
		opts.MaxLagCount = DefaultMaxLagCount
	}
	if opts.WallClock == nil {
		opts.WallClock = time.Now
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &Domain{pool: pool, opts: opts, logger: logger}
}

// Describe sends every metric's description.
func (d *Domain) Describe(ch chan<- *prometheus.Desc) {
	for _, desc := range []*prometheus.Desc{
		descHeadTxID, descHeadSeq, descHeadAge, descFrontierLag, descSinkLagEvents, descSinkLagSeconds,
		descWorkDepth, descWorkOldestDue, descLeaseHeld, descLeaseEpoch,
		descReservations, descNodes, descWebhookAttempts, descRefreshErrors, descRefreshSeconds,
	} {
		ch <- desc
	}
}

// Collect sends the metrics of the current read, reading the database
// first when the cached read is older than CacheFor.
func (d *Domain) Collect(ch chan<- prometheus.Metric) {
	snap, errs, took := d.current(time.Now())
	ch <- prometheus.MustNewConstMetric(descRefreshErrors, prometheus.CounterValue, errs)
	ch <- prometheus.MustNewConstMetric(descRefreshSeconds, prometheus.GaugeValue, took)
	if snap == nil {
		return
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	for _, h := range snap.head {
		gauge(descHeadTxID, float64(h.Txid))
		gauge(descHeadSeq, float64(h.Seq))
		gauge(descHeadAge, max(h.AgeSeconds, 0))
	}
	gauge(descFrontierLag, snap.frontierLag)
	for _, s := range snap.sinks {
		gauge(descSinkLagEvents, float64(s.Behind), s.Sink)
		gauge(descSinkLagSeconds, max(s.OldestAgeSeconds, 0), s.Sink)
	}
	for _, w := range snap.work {
		gauge(descWorkDepth, float64(w.Due), w.Kind, workDue)
		gauge(descWorkDepth, float64(w.Running), w.Kind, workRunning)
		gauge(descWorkDepth, float64(max(w.Items-w.Due-w.Running, 0)), w.Kind, workScheduled)
		gauge(descWorkOldestDue, max(w.OldestDueAgeSeconds, 0), w.Kind)
	}
	for _, l := range snap.leases {
		gauge(descLeaseHeld, 1, l.Name, l.Owner)
		gauge(descLeaseEpoch, float64(l.Epoch), l.Name)
	}
	for _, st := range statesOf(core.ReservationStateTable(), snap.reservations) {
		gauge(descReservations, float64(snap.reservations[st]), st)
	}
	for _, st := range statesOf(core.NodeLivenessTable(), snap.nodes) {
		gauge(descNodes, float64(snap.nodes[st]), st)
	}
	for _, o := range webhookOutcomes {
		ch <- prometheus.MustNewConstMetric(descWebhookAttempts, prometheus.CounterValue, snap.webhooks[o], o)
	}
}

// statesOf lists the table's states, so that each has a series (0 when no
// row is in it), then any other state found in counts.
func statesOf(t core.StateTable, counts map[string]int64) []string {
	var out []string
	known := map[string]bool{}
	for _, s := range t.States {
		out = append(out, string(s))
		known[string(s)] = true
	}
	for s := range counts {
		if !known[s] {
			out = append(out, s)
		}
	}
	return out
}

// current returns the read to serve (nil when there is none fresh enough)
// with the read error count and the duration of the last read. It reads
// the database when the last attempt is CacheFor old; a failed read is
// not retried before that either, so a struggling database is not asked
// more often.
func (d *Domain) current(now time.Time) (*domainSnapshot, float64, float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.triedAt.IsZero() || now.Sub(d.triedAt) >= d.opts.CacheFor {
		d.triedAt = now
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), d.opts.Timeout)
		snap, err := d.read(ctx, now)
		cancel()
		d.refreshSeconds = time.Since(start).Seconds()
		if err != nil {
			d.errors++
			d.logger.Warn("domain metrics: read failed; serving the last good values", "err", err)
		} else {
			d.last, d.lastAt = snap, now
		}
	}
	if d.last == nil || now.Sub(d.lastAt) > max(staleAfter, 2*d.opts.CacheFor) {
		return nil, d.errors, d.refreshSeconds
	}
	return d.last, d.errors, d.refreshSeconds
}

// read runs the domain queries in one read-only repeatable-read
// transaction, so that they see one snapshot. The finished reservations
// and the webhook counter's state are kept only when every query
// succeeded.
func (d *Domain) read(ctx context.Context, now time.Time) (*domainSnapshot, error) {
	tx, err := d.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	q := db.New(tx)
	var s domainSnapshot
	if s.head, err = q.MetricsOutboxHead(ctx); err != nil {
		return nil, fmt.Errorf("outbox head: %w", err)
	}
	frontier, err := q.OutboxFrontierLag(ctx)
	if err != nil {
		return nil, fmt.Errorf("outbox frontier: %w", err)
	}
	if frontier.OldestXactStart != nil {
		s.frontierLag = max(d.opts.WallClock().Sub(*frontier.OldestXactStart).Seconds(), 0)
	}
	if s.sinks, err = q.MetricsOutboxSinkLag(ctx, d.opts.MaxLagCount); err != nil {
		return nil, fmt.Errorf("outbox sink lag: %w", err)
	}
	if s.work, err = q.MetricsWorkQueue(ctx); err != nil {
		return nil, fmt.Errorf("work queue: %w", err)
	}
	if s.leases, err = q.MetricsLeasesHeld(ctx); err != nil {
		return nil, fmt.Errorf("leases: %w", err)
	}
	live, err := q.MetricsReservationsLive(ctx)
	if err != nil {
		return nil, fmt.Errorf("live reservations: %w", err)
	}
	finished, finishedAt := d.finished, d.finishedAt
	if finished == nil || now.Sub(finishedAt) >= d.opts.FinishedEvery {
		rows, err := q.MetricsReservationsFinished(ctx)
		if err != nil {
			return nil, fmt.Errorf("finished reservations: %w", err)
		}
		finished, finishedAt = map[string]int64{}, now
		for _, r := range rows {
			finished[r.State] = r.N
		}
	}
	s.reservations = map[string]int64{}
	for st, n := range finished {
		s.reservations[st] = n
	}
	for _, r := range live {
		s.reservations[r.State] = r.N
	}
	nodes, err := q.MetricsNodesByState(ctx)
	if err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	s.nodes = map[string]int64{}
	for _, r := range nodes {
		s.nodes[r.State] = r.N
	}
	hooks, err := d.hooks.next(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("webhook attempts: %w", err)
	}
	s.webhooks = hooks.totals
	d.finished, d.finishedAt, d.hooks = finished, finishedAt, hooks
	return &s, nil
}

// next returns the counter's state after the attempts recorded since c:
// on the first read it only notes where the attempts stand, so the
// counter starts at 0 with the process.
func (c webhookCount) next(ctx context.Context, q *db.Queries) (webhookCount, error) {
	if !c.started {
		last, err := q.MetricsWebhookAttemptsLastID(ctx)
		if err != nil {
			return c, err
		}
		return webhookCount{started: true, lastID: last, totals: map[string]float64{}}, nil
	}
	rows, err := q.MetricsWebhookAttemptsAfter(ctx, c.lastID)
	if err != nil {
		return c, err
	}
	out := webhookCount{started: true, lastID: c.lastID, totals: make(map[string]float64, len(c.totals))}
	for o, n := range c.totals {
		out.totals[o] = n
	}
	for _, r := range rows {
		out.totals[r.Outcome] += float64(r.N)
		out.lastID = max(out.lastID, r.LastID)
	}
	return out, nil
}
