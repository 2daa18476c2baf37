package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/metrics"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
)

// observed is a test server whose /metrics serves what `compute serve`
// registers: the Go, process and build collectors, the domain collector
// (reading at every scrape) and the loops' counters, with the capacity
// routes over the commandstest fleet (node n1 with two a100s, tenant acme
// with quotas).
type observed struct {
	*testServer
	h      *commands.Handlers
	loops  *metrics.Loops
	member string
}

// testBuild is the build the observed server says it runs.
var testBuild = metrics.Build{Version: "v9.9.9", Commit: "c0ffee", GoVersion: runtime.Version()}

func setupObserved(t *testing.T) *observed {
	t.Helper()
	reg := metrics.NewRegistry(testBuild)
	h := new(commands.Handlers)
	s := setupWith(t, func(d *httpapi.Deps) {
		d.Registry = reg
		d.Admission = httpapi.NewCommandAdmission(8) // as in serve: its gauges are served too
	}, httpapi.CapacityRoutes(h))
	*h = *commands.New(s.pg.Pool, commands.Config{})
	reg.MustRegister(metrics.NewDomain(s.pg.Pool, metrics.DomainOptions{CacheFor: time.Nanosecond, FinishedEvery: time.Nanosecond}))
	o := &observed{testServer: s, h: h, loops: metrics.NewLoops(reg)}
	commandstest.Seed(t, s.pg, h, 0)
	commandstest.Node(t, h, "n1", core.GPULayout{Mode: core.GPUExclusive}, core.GPULayout{Mode: core.GPUExclusive})
	_, o.member = s.tokenFor(t, "acme", "bob@acme", core.RoleMember)
	return o
}

// scrape reads /metrics as the operator: one value per series, keyed
// name{label="value",…} with the labels sorted.
func (s *testServer) scrape(t *testing.T) map[string]float64 {
	t.Helper()
	r := s.call(t, http.MethodGet, "/metrics", s.operator, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	return parseExposition(t, r.body)
}

var (
	seriesLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

func parseExposition(t *testing.T, body []byte) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := seriesLine.FindStringSubmatch(line)
		require.NotNil(t, m, "exposition line %q", line)
		key := m[1]
		if m[3] != "" {
			var labels []string
			for _, p := range labelPair.FindAllStringSubmatch(m[3], -1) {
				labels = append(labels, p[1]+`="`+p[2]+`"`)
			}
			sort.Strings(labels)
			key += "{" + strings.Join(labels, ",") + "}"
		}
		v, err := strconv.ParseFloat(m[4], 64)
		require.NoError(t, err, "exposition line %q", line)
		out[key] = v
	}
	require.NoError(t, sc.Err())
	return out
}

func (o *observed) reserve(t *testing.T) string {
	t.Helper()
	now := o.pg.Now(t)
	var rsv struct{ ID, State string }
	r := o.call(t, http.MethodPost, "/v1/reservations", o.member, map[string]any{
		"poolId": commandstest.Pool, "gpus": 1, "vcpu": 8, "memoryMb": 16384,
		"start": now.Format(time.RFC3339), "end": now.Add(2 * time.Hour).Format(time.RFC3339),
	})
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	r.decode(t, &rsv)
	require.Equal(t, "booked", rsv.State)
	return rsv.ID
}

// /metrics tells what the fleet did: after two reservations, a release,
// an activation by the worker and a projection catching up, each series
// has the value those actions leave.
func TestMetricsAfterKnownActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := setupObserved(t)

	first, second := o.reserve(t), o.reserve(t)
	got := o.scrape(t)
	require.Equal(t, 2.0, got[`compute_reservations{state="booked"}`])
	for _, st := range []string{"pending", "active", "released", "expired", "cancelled", "failed"} {
		require.Zero(t, got[`compute_reservations{state="`+st+`"}`], st)
	}
	require.Equal(t, 1.0, got[`compute_nodes{state="registered"}`])
	require.Zero(t, got[`compute_nodes{state="connected"}`])
	require.Equal(t, 2.0, got[`compute_workqueue_depth{kind="reservation.activate",state="due"}`], "both start now")
	require.Zero(t, got[`compute_workqueue_depth{kind="reservation.expire",state="scheduled"}`],
		"a booking's expiry is armed by its activation")
	require.Equal(t, 1.0, got[`compute_build_info{commit="c0ffee",goversion="`+runtime.Version()+`",version="v9.9.9"}`])
	require.Equal(t, 2.0, got[`compute_http_requests_total{method="POST",route="/v1/reservations",status="201"}`])
	require.Zero(t, got["compute_domain_metrics_refresh_errors_total"])

	// One released; the worker activates what is due (the released one's
	// activation finds nothing to do).
	r := o.call(t, http.MethodPost, "/v1/reservations/"+first+"/release", o.member, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	w := workqueue.NewWorker(o.pg.Pool, "worker-1", o.clock, nil)
	w.Metrics = o.loops
	w.Handle(commands.KindReservationActivate, o.h.Reconcilers().ReservationActivate)
	n, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)

	got = o.scrape(t)
	require.Equal(t, 1.0, got[`compute_reservations{state="active"}`], second+" is active")
	require.Zero(t, got[`compute_reservations{state="booked"}`])
	require.Equal(t, 1.0, got[`compute_reservations{state="released"}`], first+" is released")
	require.Zero(t, got[`compute_workqueue_depth{kind="reservation.activate",state="due"}`])
	require.Equal(t, 1.0, got[`compute_workqueue_depth{kind="reservation.expire",state="scheduled"}`],
		"the active one ends in 2 h")
	require.Equal(t, 2.0, got[`compute_workqueue_items_total{kind="reservation.activate",outcome="done"}`])
	require.Equal(t, 2.0, got[`compute_workqueue_item_duration_seconds_count{kind="reservation.activate"}`])
	require.Equal(t, 1.0, got[`compute_lease_held{holder="worker-1",lease="shard:`+strconv.Itoa(int(workqueue.ShardOf(second)))+`"}`])

	// The reservations projection catches up under its lease: its lag
	// falls to 0 and its batches are counted. (The outbox frontier is
	// cluster-wide, so other tests' transactions may hold events back for
	// a while: poll.)
	d := outbox.NewTxDispatcher(o.pg.Pool, "proc-test", projections.Reservations{}, nil)
	d.Metrics = o.loops
	require.Eventually(t, func() bool {
		_, err := d.RunOnce(ctx)
		require.NoError(t, err)
		got = o.scrape(t)
		v, ok := got[`compute_outbox_sink_lag_events{sink="reservations"}`]
		return ok && v == 0 && got["compute_outbox_head_seq"] > 0
	}, 20*time.Second, 50*time.Millisecond)
	require.Zero(t, got[`compute_outbox_sink_lag_seconds{sink="reservations"}`])
	require.Equal(t, 1.0, got[`compute_lease_held{holder="proc-test",lease="singleton:outbox-dispatch:reservations"}`])
	require.Positive(t, got[`compute_outbox_dispatched_events_total{sink="reservations"}`])
	require.Positive(t, got[`compute_outbox_batches_total{result="ok",sink="reservations"}`])
}

// exported lists the metric names a compute process exports: every family
// a scrape shows (with a histogram's _bucket, _sum and _count), and every
// name the domain collector describes, whether or not the fleet has rows
// for it yet.
func exported(t *testing.T, o *observed) map[string]bool {
	t.Helper()
	o.loops.SinkBatch("webhooks", 1, time.Millisecond, nil)
	o.loops.WorkItem("webhook.deliver", metrics.OutcomeDone, time.Millisecond)
	r := o.call(t, http.MethodGet, "/metrics", o.operator, nil)
	require.Equal(t, http.StatusOK, r.status)
	names := map[string]bool{}
	typeLine := regexp.MustCompile(`(?m)^# TYPE (\S+) (\S+)$`)
	for _, m := range typeLine.FindAllStringSubmatch(string(r.body), -1) {
		names[m[1]] = true
		if m[2] == "histogram" || m[2] == "summary" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				names[m[1]+suffix] = true
			}
		}
	}
	descs := make(chan *prometheus.Desc, 64)
	metrics.NewDomain(o.pg.Pool, metrics.DomainOptions{}).Describe(descs)
	close(descs)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		m := fqName.FindStringSubmatch(d.String())
		require.NotNil(t, m, d.String())
		names[m[1]] = true
	}
	return names
}
