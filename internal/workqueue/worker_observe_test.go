package workqueue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/bettercompute/compute/internal/metrics"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/workqueue"
)

// Every item runs inside a span of its kind, which says how it ended and
// is failed only when the handler failed; the loops count each item by
// kind and outcome.
func TestWorkerTracesAndCountsItems(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	reg := prometheus.NewRegistry()
	w := workqueue.NewWorker(d.Pool, "w1", nil, nil)
	w.Tracer, w.Metrics = tp.Tracer("test"), metrics.NewLoops(reg)
	traced := map[string]bool{}
	w.Handle(kind, func(ctx context.Context, it workqueue.Item) error {
		traced[it.Key] = trace.SpanFromContext(ctx).SpanContext().IsValid()
		switch it.Key {
		case "again":
			return workqueue.Again(time.Minute)
		case "fails":
			return errors.New("node unreachable")
		}
		return nil
	})
	w.Concurrency = 1 // traced is the handler's own map
	for _, key := range []string{"ok", "again", "fails"} {
		enqueue(t, d, key, 0)
	}
	require.Equal(t, 3, runOnce(t, w))
	require.Equal(t, map[string]bool{"ok": true, "again": true, "fails": true}, traced, "handlers run inside the item's span")

	outcomes := map[string]string{}
	for _, s := range sr.Ended() {
		require.Equal(t, "workqueue "+kind, s.Name())
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		outcomes[attrs["compute.work.key"]] = attrs["compute.work.outcome"]
		want := codes.Unset
		if attrs["compute.work.key"] == "fails" {
			want = codes.Error
		}
		require.Equal(t, want, s.Status().Code, attrs["compute.work.key"])
	}
	require.Equal(t, map[string]string{"ok": "done", "again": "again", "fails": "failed"}, outcomes)

	fams, err := reg.Gather()
	require.NoError(t, err)
	counts := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += " " + l.GetValue()
			}
			if h := m.GetHistogram(); h != nil {
				counts[key] = float64(h.GetSampleCount())
			} else {
				counts[key] = m.GetCounter().GetValue()
			}
		}
	}
	require.Equal(t, map[string]float64{
		metrics.NameWorkQueueItems + " " + kind + " done":   1,
		metrics.NameWorkQueueItems + " " + kind + " again":  1,
		metrics.NameWorkQueueItems + " " + kind + " failed": 1,
		metrics.NameWorkQueueItemDuration + " " + kind:      3,
	}, counts)
}
