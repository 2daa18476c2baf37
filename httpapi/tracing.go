package httpapi

import (
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"gopkg.in/yaml.v3"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/docs"
	"github.com/bettercompute/compute/internal/tracing"
)

// traceRequests starts the server span of every request, named by method
// and route pattern ("POST /v1/reservations", never the raw path; the
// url.path attribute has secrets redacted, as the access log), as the
// child of the caller's span when it sent a W3C traceparent header. The
// span is in the request's context from here on, so the access log line
// and everything the handler logs with that context carry its trace id.
// The probes (/healthz, /readyz, /metrics), polled every few seconds, are
// not traced, as their access lines are logged at debug level. With a nil
// tp (tracing off) it is not installed at all.
func traceRequests(tp trace.TracerProvider) echo.MiddlewareFunc {
	if tp == nil {
		return passThrough
	}
	tracer := tp.Tracer(tracing.ScopeName)
	propagator := propagation.TraceContext{}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			route, method := c.Path(), metricMethod(req.Method)
			if probeRoutes[route] {
				return next(c)
			}
			name := method
			if route != "" {
				name += " " + route
			}
			ctx := propagator.Extract(req.Context(), propagation.HeaderCarrier(req.Header))
			ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
				semconv.HTTPRequestMethodKey.String(method),
				semconv.URLPath(core.RedactSecrets(req.URL.Path)),
				semconv.ClientAddress(c.RealIP()),
				semconv.UserAgentOriginal(core.RedactSecrets(req.UserAgent())),
				attribute.String("compute.request_id", c.Response().Header().Get(echo.HeaderXRequestID)),
			))
			defer span.End()
			if route != "" {
				span.SetAttributes(semconv.HTTPRoute(route))
			}
			c.SetRequest(req.WithContext(ctx))
			err := next(c)
			// The access log inside has handed any error to the error
			// handler: the status is the one the client received.
			status := c.Response().Status
			span.SetAttributes(semconv.HTTPResponseStatusCode(status))
			if code, ok := c.Get(ctxKeyErrorCode).(core.Code); ok {
				span.SetAttributes(attribute.String("compute.error.code", string(code)))
			}
			if status >= 500 {
				span.SetStatus(codes.Error, "")
			}
			return err
		}
	}
}

// traceCommands starts a span around each command: a state-changing /v1
// request (POST, PUT, PATCH, DELETE) past authentication, named after its
// operation in docs/openapi.yaml ("command createReservation"), with the
// caller's tenant and role. It is the child of the request's span; a
// command that fails (a domain error: CONFLICT, QUOTA_EXCEEDED, …) marks it
// failed with the error's code. It sits on the /v1 group after the auth
// gate, so the handler, and through its context the command, run inside
// it. With a nil tp it is not installed.
func traceCommands(tp trace.TracerProvider) echo.MiddlewareFunc {
	if tp == nil {
		return passThrough
	}
	tracer := tp.Tracer(tracing.ScopeName)
	ops := operationIDs()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			op := ops[req.Method+" "+c.Path()]
			if !isCommandMethod(req.Method) || op == "" {
				return next(c)
			}
			ctx, span := tracer.Start(req.Context(), "command "+op,
				trace.WithAttributes(attribute.String("compute.command", op)))
			defer span.End()
			if actor, ok := c.Get(ctxKeyActor).(core.Actor); ok {
				span.SetAttributes(attribute.String("compute.tenant", actor.Tenant), attribute.String("compute.role", string(actor.Role)))
			}
			c.SetRequest(req.WithContext(ctx))
			err := next(c)
			// Back to the request's own context: the access log joins its
			// line to the request's span, not to this one.
			c.SetRequest(req)
			if err != nil {
				// What the client is told, never the internals of a 500.
				_, detail := classify(err)
				span.SetAttributes(attribute.String("compute.error.code", string(detail.Code)))
				span.SetStatus(codes.Error, detail.Message)
			}
			return err
		}
	}
}

func passThrough(next echo.HandlerFunc) echo.HandlerFunc { return next }

// operationIDs maps "METHOD /echo/route/:param" to the operationId of
// docs/openapi.yaml; a route the specification does not describe (echo's
// catch-alls) has none.
func operationIDs() map[string]string {
	var spec struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	out := map[string]string{}
	if err := yaml.Unmarshal(docs.OpenAPI, &spec); err != nil {
		return out // the spec's own test fails first; commands then go untraced
	}
	param := regexp.MustCompile(`\{([A-Za-z0-9_]+)\}`)
	for path, item := range spec.Paths {
		route := param.ReplaceAllString(path, ":$1")
		for method, node := range item {
			var op struct {
				OperationID string `yaml:"operationId"`
			}
			if node.Kind == yaml.MappingNode && node.Decode(&op) == nil && op.OperationID != "" {
				out[strings.ToUpper(method)+" "+route] = op.OperationID
			}
		}
	}
	return out
}
