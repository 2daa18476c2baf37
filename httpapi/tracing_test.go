package httpapi_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/tracing"
)

// traced is a test server whose requests are traced into an in-memory
// recorder, with the trace ids in its JSON logs as in production.
func traced(t *testing.T) (*testServer, *tracetest.SpanRecorder) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	s := setupWith(t, func(d *httpapi.Deps) {
		d.TracerProvider = tp
		d.Logger = slog.New(tracing.LogHandler(d.Logger.Handler()))
	})
	return s, sr
}

// spansOf waits until n spans of trace id have ended (the server span
// ends after the response is written) and returns them by name.
func spansOf(t *testing.T, sr *tracetest.SpanRecorder, id trace.TraceID, n int) map[string]sdktrace.ReadOnlySpan {
	t.Helper()
	out := map[string]sdktrace.ReadOnlySpan{}
	require.Eventually(t, func() bool {
		clear(out)
		for _, s := range sr.Ended() {
			if s.SpanContext().TraceID() == id {
				out[s.Name()] = s
			}
		}
		return len(out) >= n
	}, 5*time.Second, 5*time.Millisecond)
	require.Len(t, out, n, "spans of trace %s", id)
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// A command over HTTP is one trace: the server span, joined to the
// caller's traceparent, and the command's span, its child, named after the
// operation; the access log line carries the trace and span ids.
func TestARequestIsTracedWithItsCommand(t *testing.T) {
	t.Parallel()
	s, sr := traced(t)
	const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	req, err := http.NewRequest(http.MethodPost, s.url+"/v1/tokens",
		strings.NewReader(`{"tenant":"acme","identity":"ci@acme","role":"member"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.operator)
	req.Header.Set("Traceparent", caller)
	r := s.do(t, req)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)

	traceID, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	parentID, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	spans := spansOf(t, sr, traceID, 2)
	server, command := spans["POST /v1/tokens"], spans["command createToken"]
	require.NotNil(t, server, "spans: %v", spans)
	require.NotNil(t, command, "spans: %v", spans)

	require.Equal(t, trace.SpanKindServer, server.SpanKind())
	require.Equal(t, parentID, server.Parent().SpanID(), "the caller's span is the parent")
	require.True(t, server.Parent().IsRemote())
	sa := attrs(server)
	require.Equal(t, "/v1/tokens", sa["http.route"].AsString())
	require.Equal(t, int64(201), sa["http.response.status_code"].AsInt64())
	require.Equal(t, "POST", sa["http.request.method"].AsString())
	require.Equal(t, r.header.Get("X-Request-Id"), sa["compute.request_id"].AsString())
	require.Equal(t, codes.Unset, server.Status().Code)

	require.Equal(t, server.SpanContext().SpanID(), command.Parent().SpanID(), "the command is the request's child")
	ca := attrs(command)
	require.Equal(t, "createToken", ca["compute.command"].AsString())
	require.Equal(t, "ops", ca["compute.tenant"].AsString())
	require.Equal(t, "operator", ca["compute.role"].AsString())
	require.Equal(t, codes.Unset, command.Status().Code)

	var line map[string]any
	require.Eventually(t, func() bool {
		for _, l := range logLines(t, s.logs.String(), r.header.Get("X-Request-Id")) {
			if l["msg"] == "http request" {
				line = l
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, traceID.String(), line["trace_id"])
	require.Equal(t, server.SpanContext().SpanID().String(), line["span_id"], "the access log names the request's span")
}

// A command that fails marks its span failed with the error's code; the
// request's span is failed only for a 5xx. A read has no command span, and
// a probe no span at all.
func TestFailedCommandsAndReadsAreTraced(t *testing.T) {
	t.Parallel()
	s, sr := traced(t)
	r := s.call(t, http.MethodPost, "/v1/tokens", s.operator, map[string]string{"tenant": "acme", "identity": "x@acme", "role": "root"})
	require.Equal(t, http.StatusBadRequest, r.status, "body: %s", r.body)
	rid := r.header.Get("X-Request-Id")

	var server sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		for _, sp := range sr.Ended() {
			if sp.Name() == "POST /v1/tokens" && attrs(sp)["compute.request_id"].AsString() == rid {
				server = sp
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond)
	spans := spansOf(t, sr, server.SpanContext().TraceID(), 2)
	command := spans["command createToken"]
	require.NotNil(t, command)
	require.Equal(t, codes.Error, command.Status().Code)
	require.Equal(t, "INVALID_ARGUMENT", attrs(command)["compute.error.code"].AsString())
	require.Equal(t, codes.Unset, server.Status().Code, "a 4xx is the client's failure, not the server's")
	require.Equal(t, int64(400), attrs(server)["http.response.status_code"].AsInt64())
	require.Equal(t, "INVALID_ARGUMENT", attrs(server)["compute.error.code"].AsString())

	require.Equal(t, http.StatusOK, s.call(t, http.MethodGet, "/healthz", "", nil).status)
	r = s.call(t, http.MethodGet, "/v1/whoami", s.operator, nil)
	require.Equal(t, http.StatusOK, r.status)
	rid = r.header.Get("X-Request-Id")
	require.Eventually(t, func() bool {
		for _, sp := range sr.Ended() {
			if sp.Name() == "GET /v1/whoami" && attrs(sp)["compute.request_id"].AsString() == rid {
				server = sp
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond)
	require.Len(t, spansOf(t, sr, server.SpanContext().TraceID(), 1), 1, "a read is one span")
	for _, sp := range sr.Ended() {
		require.NotEqual(t, "GET /healthz", sp.Name(), "probes are not traced")
	}
}
