package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/bettercompute/compute/internal/tracing"
)

// Without an endpoint there is no provider, nothing to shut down, and
// Start hands back the caller's context and a span that records nothing,
// without allocating.
func TestTracingIsOffWithoutAnEndpoint(t *testing.T) {
	tp, shutdown, err := tracing.Setup(context.Background(), tracing.Options{})
	require.NoError(t, err)
	require.Nil(t, tp)
	require.Nil(t, tracing.Tracer(tp))
	require.NoError(t, shutdown(context.Background()))

	ctx := context.Background()
	got, span := tracing.Start(ctx, nil, "nothing")
	require.Equal(t, ctx, got)
	require.False(t, span.IsRecording())
	tracing.End(span, errors.New("ignored"))
	allocs := testing.AllocsPerRun(100, func() {
		_, span := tracing.Start(ctx, nil, "nothing")
		tracing.End(span, nil)
	})
	require.Zero(t, allocs)
}

func TestSetupRefusesAnEndpointThatIsNotAURL(t *testing.T) {
	_, _, err := tracing.Setup(context.Background(), tracing.Options{Endpoint: "collector:4318"})
	require.ErrorContains(t, err, "collector:4318")
}

// With an endpoint, spans are POSTed as OTLP/HTTP protobuf to
// <endpoint>/v1/traces, at the latest when the provider shuts down.
func TestSpansAreExportedOverOTLPHTTP(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	var bodies [][]byte
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths = append(paths, r.URL.Path+" "+r.Header.Get("Content-Type"))
		bodies = append(bodies, b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()

	tp, shutdown, err := tracing.Setup(context.Background(), tracing.Options{
		Endpoint: collector.URL + "/", InstanceID: "host-1-abcd", Version: "v1.2.3",
	})
	require.NoError(t, err)
	require.NotNil(t, tp)
	_, span := tracing.Start(context.Background(), tracing.Tracer(tp), "command createReservation")
	tracing.End(span, nil)
	require.NoError(t, shutdown(context.Background()))

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"/v1/traces application/x-protobuf"}, paths)
	for _, want := range []string{"command createReservation", "host-1-abcd", "v1.2.3", "compute", tracing.ScopeName} {
		require.True(t, bytes.Contains(bodies[0], []byte(want)), "the export carries %q", want)
	}
}

func TestEndMarksAFailedSpan(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	_, ok := tracing.Start(context.Background(), tracing.Tracer(tp), "ok")
	tracing.End(ok, nil)
	_, failed := tracing.Start(context.Background(), tracing.Tracer(tp), "failed")
	tracing.End(failed, errors.New("conflict"))
	spans := sr.Ended()
	require.Len(t, spans, 2)
	require.Equal(t, codes.Unset, spans[0].Status().Code)
	require.Equal(t, codes.Error, spans[1].Status().Code)
	require.Equal(t, "conflict", spans[1].Status().Description)
	require.Len(t, spans[1].Events(), 1, "the error is recorded as an event")
}

// A record logged with a traced context carries trace_id and span_id;
// one without a span does not.
func TestLogHandlerAddsTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(tracing.LogHandler(slog.NewJSONHandler(&buf, nil))).With("node", "n1")
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	ctx, span := tracing.Start(context.Background(), tracing.Tracer(tp), "work")
	logger.InfoContext(ctx, "traced")
	span.End()
	logger.Info("untraced")

	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	require.Len(t, lines, 2)
	var traced, untraced map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &traced))
	require.NoError(t, json.Unmarshal(lines[1], &untraced))
	sc := trace.SpanContextFromContext(ctx)
	require.Equal(t, sc.TraceID().String(), traced["trace_id"])
	require.Equal(t, sc.SpanID().String(), traced["span_id"])
	require.Equal(t, "n1", traced["node"], "attributes of With survive")
	require.NotContains(t, untraced, "trace_id")
	require.Equal(t, "n1", untraced["node"])
}
