package outbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/bettercompute/compute/internal/metrics"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
)

// Each non-empty batch is a span, the parent of what the sink does with
// it, and is counted per sink: its events when saved, the batch as ok or
// error. An empty poll leaves no span and no count.
func TestDispatcherTracesAndCountsBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	reg := prometheus.NewRegistry()

	fail := true
	var sawSpan []bool
	sink := funcSink{id: "observed", deliver: func(ctx context.Context, events []outbox.Stored) error {
		sawSpan = append(sawSpan, trace.SpanFromContext(ctx).SpanContext().IsValid())
		if fail {
			return errors.New("endpoint down")
		}
		return nil
	}}
	disp := outbox.NewDispatcher(d.Pool, "w1", sink, nil)
	disp.Tracer, disp.Metrics = tp.Tracer("test"), metrics.NewLoops(reg)

	appendEach(t, d, "o", 3)
	waitVisible(t, d, 3)
	_, err := disp.RunOnce(ctx)
	require.ErrorContains(t, err, "endpoint down")
	fail = false
	n, err := disp.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = disp.RunOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, n)

	require.Equal(t, []bool{true, true}, sawSpan, "the sink runs inside the batch's span")
	spans := sr.Ended()
	require.Len(t, spans, 2, "one span per non-empty batch")
	for i, s := range spans {
		require.Equal(t, "outbox.dispatch observed", s.Name())
		attrs := map[string]any{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.AsInterface()
		}
		require.Equal(t, "observed", attrs["compute.sink"])
		require.Equal(t, int64(3), attrs["compute.events"])
		if i == 0 {
			require.Equal(t, codes.Error, s.Status().Code)
		} else {
			require.Equal(t, codes.Unset, s.Status().Code)
		}
	}

	counts := map[string]float64{}
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += " " + l.GetName() + "=" + l.GetValue()
			}
			if h := m.GetHistogram(); h != nil {
				counts[key] = float64(h.GetSampleCount())
			} else {
				counts[key] = m.GetCounter().GetValue()
			}
		}
	}
	require.Equal(t, map[string]float64{
		metrics.NameOutboxBatches + " result=error sink=observed": 1,
		metrics.NameOutboxBatches + " result=ok sink=observed":    1,
		metrics.NameOutboxDispatchedEvents + " sink=observed":     3,
		metrics.NameOutboxBatchDuration + " sink=observed":        2,
	}, counts)
}
