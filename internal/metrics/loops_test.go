package metrics_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/metrics"
)

func TestBuildInfo(t *testing.T) {
	t.Parallel()
	b := metrics.ReadBuild()
	require.Equal(t, runtime.Version(), b.GoVersion)
	require.NotEmpty(t, b.Version)
	require.NotEmpty(t, b.Commit)

	reg := metrics.NewRegistry(metrics.Build{Version: "v1.2.3", Commit: "abc123", GoVersion: "go1.26.0"})
	got := series(t, reg)
	require.Equal(t, 1.0, got[`compute_build_info{commit="abc123",goversion="go1.26.0",version="v1.2.3"}`])
	require.NotEmpty(t, withPrefix(got, "go_goroutines"), "the Go collector")
	require.NotEmpty(t, withPrefix(got, "process_"), "the process collector")
}

func TestLoopsCountBatchesAndItems(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	l := metrics.NewLoops(reg)
	l.SinkBatch("webhooks", 100, 20*time.Millisecond, nil)
	l.SinkBatch("webhooks", 7, 5*time.Millisecond, nil)
	l.SinkBatch("webhooks", 50, time.Second, errors.New("fenced"))
	l.WorkItem("reservation.activate", metrics.OutcomeDone, time.Millisecond)
	l.WorkItem("reservation.activate", metrics.OutcomeDone, time.Millisecond)
	l.WorkItem("webhook.deliver", metrics.OutcomeFailed, time.Second)

	// A second Loops on the same registry shares the counters.
	metrics.NewLoops(reg).WorkItem("webhook.deliver", metrics.OutcomeAgain, 0)

	require.Equal(t, map[string]float64{
		`compute_outbox_batches_total{result="ok",sink="webhooks"}`:                  2,
		`compute_outbox_batches_total{result="error",sink="webhooks"}`:               1,
		`compute_outbox_dispatched_events_total{sink="webhooks"}`:                    107,
		`compute_outbox_batch_duration_seconds_count{sink="webhooks"}`:               3,
		`compute_workqueue_items_total{kind="reservation.activate",outcome="done"}`:  2,
		`compute_workqueue_items_total{kind="webhook.deliver",outcome="failed"}`:     1,
		`compute_workqueue_items_total{kind="webhook.deliver",outcome="again"}`:      1,
		`compute_workqueue_item_duration_seconds_count{kind="reservation.activate"}`: 2,
		`compute_workqueue_item_duration_seconds_count{kind="webhook.deliver"}`:      2,
	}, series(t, reg))

	var none *metrics.Loops // what a dispatcher or worker built without metrics holds
	none.SinkBatch("x", 1, 0, nil)
	none.WorkItem("x", metrics.OutcomeDone, 0)
}
