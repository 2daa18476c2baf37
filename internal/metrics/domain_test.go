package metrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/metrics"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/workqueue"
)

// waitFor bounds polls on the outbox: the frontier is cluster-wide, so a
// transaction another test package holds open delays what is visible.
const waitFor = 20 * time.Second

// domain is a Domain on d that reads the database at every scrape.
func domain(t *testing.T, d *pgtest.DB) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewDomain(d.Pool, metrics.DomainOptions{CacheFor: time.Nanosecond, FinishedEvery: time.Nanosecond}))
	return reg
}

// webhookFixture is an endpoint of tenant acme with one delivery, to hang
// attempts on.
type webhookFixture struct {
	d        *pgtest.DB
	delivery uuid.UUID
	event    uuid.UUID
	attempts int
}

func newWebhookFixture(t *testing.T, d *pgtest.DB) *webhookFixture {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, d.Q.TenantEnsure(ctx, "acme"))
	f := &webhookFixture{d: d, delivery: uuid.New(), event: uuid.New()}
	_, err := d.Pool.Exec(ctx, `INSERT INTO webhook_endpoints (id, tenant_id, url, secret)
		VALUES ('we_1', 'acme', 'https://hooks.example.com', 'whsec_dGVzdA==')`)
	require.NoError(t, err)
	_, err = d.Pool.Exec(ctx, `INSERT INTO webhook_deliveries (id, endpoint_id, event_id) VALUES ($1, 'we_1', $2)`,
		f.delivery, f.event)
	require.NoError(t, err)
	return f
}

// attempt records one attempt: a response status, or none and an error.
func (f *webhookFixture) attempt(t *testing.T, status *int, errText *string) {
	t.Helper()
	f.attempts++
	_, err := f.d.Pool.Exec(context.Background(), `INSERT INTO webhook_attempts
		(delivery_id, endpoint_id, event_id, attempt, status, latency_ms, error) VALUES ($1, 'we_1', $2, $3, $4, 12, $5)`,
		f.delivery, f.event, f.attempts, status, errText)
	require.NoError(t, err)
}

func ptr[T any](v T) *T { return &v }

func appendEvent(t *testing.T, d *pgtest.DB, subject string) db.OutboxAppendRow {
	t.Helper()
	row, err := d.Q.OutboxAppend(context.Background(), db.OutboxAppendParams{
		ID: uuid.New(), Type: "test.happened", Subject: subject, Data: json.RawMessage(`{}`),
	})
	require.NoError(t, err)
	return row
}

func enqueue(t *testing.T, d *pgtest.DB, kind, key string, delay time.Duration) {
	t.Helper()
	require.NoError(t, pgx.BeginFunc(context.Background(), d.Pool, func(tx pgx.Tx) error {
		return workqueue.Enqueue(context.Background(), db.New(tx), kind, key, delay)
	}))
}

// An empty fleet has a series for every reservation and node state and
// every webhook outcome, all 0, and none for the log, sinks, work or
// leases but the frontier's lag (the cluster's, whatever the log holds).
func TestDomainOfAnEmptyFleet(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	got := series(t, domain(t, d))
	for _, st := range []string{"pending", "booked", "active", "released", "expired", "cancelled", "failed"} {
		require.Contains(t, got, `compute_reservations{state="`+st+`"}`)
		require.Zero(t, got[`compute_reservations{state="`+st+`"}`])
	}
	for _, st := range []string{"registered", "connected", "disconnected", "unreachable", "lost", "retired"} {
		require.Contains(t, got, `compute_nodes{state="`+st+`"}`)
	}
	for _, o := range []string{"success", "http_4xx", "http_5xx", "http_other", "timeout", "connection_error"} {
		require.Contains(t, got, `compute_webhook_attempts_total{outcome="`+o+`"}`)
	}
	require.Contains(t, got, "compute_outbox_frontier_lag_seconds")
	delete(got, "compute_outbox_frontier_lag_seconds")
	for _, prefix := range []string{"compute_outbox_", "compute_workqueue_", "compute_lease_"} {
		require.Empty(t, withPrefix(got, prefix))
	}
	require.Zero(t, got["compute_domain_metrics_refresh_errors_total"])
}

// After known actions, each domain series says exactly what happened:
// the log's head, each sink's lag in events and seconds, the work queue
// by kind and state with the age of its oldest due item, the leases held
// and their holders, and the webhook attempts since the first scrape by
// outcome.
func TestDomainSeriesAfterKnownActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	hooks := newWebhookFixture(t, d)
	hooks.attempt(t, ptr(500), ptr("HTTP 500")) // before the first scrape: not counted
	reg := domain(t, d)
	require.Zero(t, series(t, reg)[`compute_webhook_attempts_total{outcome="http_5xx"}`])

	// Three events; sink "behind" has delivered none, "caught-up" all.
	for i := range 2 {
		appendEvent(t, d, fmt.Sprint("e", i))
	}
	last := appendEvent(t, d, "e2")
	require.NoError(t, d.Q.OutboxCursorSave(ctx, db.OutboxCursorSaveParams{Sink: "behind"}))
	require.NoError(t, d.Q.OutboxCursorSave(ctx, db.OutboxCursorSaveParams{Sink: "caught-up", Txid: last.Txid, Seq: last.Seq}))

	// Work: one item due now, one due now but claimed, one due in a minute.
	enqueue(t, d, "test.a", "a1", 0)
	enqueue(t, d, "test.a", "a2", 0)
	enqueue(t, d, "test.a", "a3", time.Minute)
	_, err := d.Pool.Exec(ctx, `UPDATE work_queue SET claimed_until = compute_now() + interval '10 minutes', claimed_by = 'w1'
		WHERE kind = 'test.a' AND key = 'a2'`)
	require.NoError(t, err)

	// A shard lease that will have expired, and a sink lease taken over.
	_, err = lease.Acquire(ctx, d.Q, "shard:7", "gone", lease.TTL)
	require.NoError(t, err)
	d.AdvanceSimClock(t, 30*time.Second)
	_, err = lease.Acquire(ctx, d.Q, "singleton:outbox-dispatch:behind", "proc-1", lease.TTL)
	require.NoError(t, err)
	d.AdvanceSimClock(t, lease.TTL+time.Second)
	_, err = lease.Acquire(ctx, d.Q, "singleton:outbox-dispatch:behind", "proc-2", lease.TTL)
	require.NoError(t, err)
	age := 30 + (lease.TTL + time.Second).Seconds()

	for _, a := range []struct {
		status *int
		err    *string
	}{{ptr(200), nil}, {ptr(204), nil}, {ptr(410), ptr("HTTP 410")}, {ptr(503), ptr("HTTP 503")},
		{ptr(302), ptr("HTTP 302")}, {nil, ptr("timeout")}, {nil, ptr("connection refused")}, {nil, ptr("TLS handshake failed")}} {
		hooks.attempt(t, a.status, a.err)
	}

	var got map[string]float64
	require.Eventually(t, func() bool {
		got = series(t, reg)
		return got[`compute_outbox_sink_lag_events{sink="behind"}`] == 3 && got["compute_outbox_head_seq"] == float64(last.Seq)
	}, waitFor, 20*time.Millisecond, "the three events become visible")

	require.Equal(t, float64(last.Txid), got["compute_outbox_head_txid"])
	require.InDelta(t, age, got["compute_outbox_head_age_seconds"], 0.001)
	require.Equal(t, map[string]float64{
		`compute_outbox_sink_lag_events{sink="behind"}`:     3,
		`compute_outbox_sink_lag_events{sink="caught-up"}`:  0,
		`compute_outbox_sink_lag_seconds{sink="behind"}`:    age,
		`compute_outbox_sink_lag_seconds{sink="caught-up"}`: 0,
	}, withPrefix(got, "compute_outbox_sink_"))

	require.Equal(t, map[string]float64{
		`compute_workqueue_depth{kind="test.a",state="due"}`:       1,
		`compute_workqueue_depth{kind="test.a",state="running"}`:   1,
		`compute_workqueue_depth{kind="test.a",state="scheduled"}`: 1,
		`compute_workqueue_oldest_due_age_seconds{kind="test.a"}`:  age,
	}, withPrefix(got, "compute_workqueue_"))

	require.Equal(t, map[string]float64{
		`compute_lease_held{holder="proc-2",lease="singleton:outbox-dispatch:behind"}`: 1,
		`compute_lease_epoch{lease="singleton:outbox-dispatch:behind"}`:                2,
	}, withPrefix(got, "compute_lease_"), "the expired shard lease is not held; the takeover moved the epoch")

	require.Equal(t, map[string]float64{
		`compute_webhook_attempts_total{outcome="success"}`:          2,
		`compute_webhook_attempts_total{outcome="http_4xx"}`:         1,
		`compute_webhook_attempts_total{outcome="http_5xx"}`:         1,
		`compute_webhook_attempts_total{outcome="http_other"}`:       1,
		`compute_webhook_attempts_total{outcome="timeout"}`:          1,
		`compute_webhook_attempts_total{outcome="connection_error"}`: 2,
	}, withPrefix(got, "compute_webhook_attempts_total"))

	// The counter only grows: more attempts add to it, pruning takes
	// nothing away.
	hooks.attempt(t, ptr(200), nil)
	require.Equal(t, 3.0, series(t, reg)[`compute_webhook_attempts_total{outcome="success"}`])
	_, err = d.Pool.Exec(ctx, `DELETE FROM webhook_attempts`)
	require.NoError(t, err)
	got = series(t, reg)
	require.Equal(t, 3.0, got[`compute_webhook_attempts_total{outcome="success"}`])
	require.Equal(t, 1.0, got[`compute_webhook_attempts_total{outcome="http_5xx"}`])
}

// Within CacheFor, scrapes are served from the last read: the database is
// not asked again.
func TestDomainCachesItsReads(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewDomain(d.Pool, metrics.DomainOptions{CacheFor: time.Hour}))
	require.Empty(t, withPrefix(series(t, reg), "compute_lease_"))
	_, err := lease.Acquire(context.Background(), d.Q, "singleton:x", "proc-1", lease.TTL)
	require.NoError(t, err)
	require.Empty(t, withPrefix(series(t, reg), "compute_lease_"), "served from the cache")

	fresh := prometheus.NewRegistry()
	fresh.MustRegister(metrics.NewDomain(d.Pool, metrics.DomainOptions{CacheFor: time.Hour}))
	require.Equal(t, 1.0, series(t, fresh)[`compute_lease_held{holder="proc-1",lease="singleton:x"}`])
}

// A failed read is counted and the last good values are served; a scrape
// never fails because the database does.
func TestDomainServesTheLastGoodReadWhenTheDatabaseFails(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	pool, err := pg.Connect(context.Background(), d.URL, pg.PoolOptions{})
	require.NoError(t, err)
	quiet := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewDomain(pool, metrics.DomainOptions{CacheFor: time.Nanosecond, Timeout: time.Second, Logger: quiet}))
	_, err = lease.Acquire(context.Background(), d.Q, "singleton:x", "proc-1", lease.TTL)
	require.NoError(t, err)
	got := series(t, reg)
	require.Equal(t, 1.0, got[`compute_lease_held{holder="proc-1",lease="singleton:x"}`])
	require.Zero(t, got["compute_domain_metrics_refresh_errors_total"])

	pool.Close()
	got = series(t, reg)
	require.Equal(t, 1.0, got["compute_domain_metrics_refresh_errors_total"])
	require.Equal(t, 1.0, got[`compute_lease_held{holder="proc-1",lease="singleton:x"}`], "the last good read")

	// A collector that never read successfully serves its errors only.
	broken := prometheus.NewRegistry()
	broken.MustRegister(metrics.NewDomain(pool, metrics.DomainOptions{Timeout: time.Second, Logger: quiet}))
	got = series(t, broken)
	require.Equal(t, 1.0, got["compute_domain_metrics_refresh_errors_total"])
	require.Empty(t, withPrefix(got, "compute_nodes"))
	require.Empty(t, withPrefix(got, "compute_reservations"))
}
