// Package tracing is the control plane's OpenTelemetry tracing: Setup builds
// the process's tracer provider, which exports spans over OTLP/HTTP when an
// endpoint is configured and is nil otherwise; Start and End are the span
// helpers the HTTP layer, the outbox dispatchers and the work-queue workers
// use; LogHandler puts the trace and span ids of a context into its log
// records; FailureStreak logs a polling loop's run of failures (a database
// outage) as a few lines instead of one per poll.
//
// Nothing here is global: main passes the provider (or its Tracer) to what
// it wires, and a nil tracer means tracing is off. Then Start returns a span
// that records nothing, without allocating, so the code paths cost the same
// as before tracing existed. The OpenTelemetry globals
// (otel.SetTracerProvider) are left alone.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every span the control plane
// starts.
const ScopeName = "github.com/bettercompute/compute"

// DefaultServiceName is service.name when OTEL_SERVICE_NAME is unset.
const DefaultServiceName = "compute"

// Options configure Setup.
type Options struct {
	// Endpoint is the base URL of an OTLP/HTTP receiver, as in
	// OTEL_EXPORTER_OTLP_ENDPOINT (http://collector:4318): spans go to
	// <Endpoint>/v1/traces.
	Endpoint string
	// TracesEndpoint is the full URL spans are POSTed to, as in
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; it wins over Endpoint.
	TracesEndpoint string
	// ServiceName is service.name unless OTEL_SERVICE_NAME sets it; empty
	// means DefaultServiceName.
	ServiceName string
	// InstanceID is service.instance.id: the process (its lease owner).
	InstanceID string
	// Version is service.version.
	Version string
	// Attributes are added to the resource (the process's roles, say).
	Attributes []attribute.KeyValue
}

// Enabled reports whether o asks for tracing: some endpoint is set.
func (o Options) Enabled() bool { return o.Endpoint != "" || o.TracesEndpoint != "" }

// tracesURL is where spans are sent.
func (o Options) tracesURL() (string, error) {
	raw := o.TracesEndpoint
	if raw == "" {
		raw = strings.TrimSuffix(o.Endpoint, "/") + "/v1/traces"
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("tracing: OTLP endpoint %q is not an http(s) URL", raw)
	}
	return raw, nil
}

// Setup returns the tracer provider of the process and the function that
// flushes and stops it at shutdown. When o has no endpoint it returns a nil
// provider (tracing off) and a shutdown that does nothing. The exporter
// reads the rest of its settings (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
// _COMPRESSION, the TLS files) and the SDK its sampler (OTEL_TRACES_SAMPLER,
// default parentbased_always_on) from the standard environment variables;
// the resource takes OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
func Setup(ctx context.Context, o Options) (trace.TracerProvider, func(context.Context) error, error) {
	noop := func(context.Context) error { return nil }
	if !o.Enabled() {
		return nil, noop, nil
	}
	endpoint, err := o.tracesURL()
	if err != nil {
		return nil, noop, err
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, noop, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := newResource(o)
	if err != nil {
		return nil, noop, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// newResource describes the process: service name, version and instance,
// o's attributes, then whatever the environment adds or overrides.
func newResource(o Options) (*resource.Resource, error) {
	name := o.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	attrs := append([]attribute.KeyValue{semconv.ServiceName(name)}, o.Attributes...)
	if o.Version != "" {
		attrs = append(attrs, semconv.ServiceVersion(o.Version))
	}
	if o.InstanceID != "" {
		attrs = append(attrs, semconv.ServiceInstanceID(o.InstanceID))
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override what the process says of itself.
	res, err := resource.New(context.Background(), resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return res, nil
}

// Tracer is the control plane's tracer from tp, or nil when tp is nil
// (tracing off).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(ScopeName)
}

// Start starts a span named name, a child of ctx's span, with t. With a nil
// t (tracing off) it returns ctx unchanged and a span that records nothing,
// without allocating; callers that add attributes check span.IsRecording()
// first so that they do not build them for nothing.
func Start(ctx context.Context, t trace.Tracer, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return t.Start(ctx, name, opts...)
}

// End ends span, marking it failed with err when err is not nil.
func End(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
