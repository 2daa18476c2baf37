package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/metrics"
	"github.com/bettercompute/compute/internal/tracing"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/placement"
)

// observability is what one `compute serve` process reports to: the
// registry its /metrics serves (Go, process, build info, the domain
// gauges read from the database, the loops' counters and httpapi's HTTP
// metrics), and the tracer provider (nil: tracing off). See
// docs/operations/observability.md.
type observability struct {
	registry *prometheus.Registry
	loops    *metrics.Loops
	tp       trace.TracerProvider
	shutdown func(context.Context) error
}

// newObservability builds the process's metrics, the domain collector on
// pool, and its tracer provider when an OTLP endpoint is configured.
// owner names the process (service.instance.id).
func newObservability(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, owner string, logger *slog.Logger) (observability, error) {
	b := buildOf()
	reg := metrics.NewRegistry(b)
	reg.MustRegister(metrics.NewDomain(pool, metrics.DomainOptions{Logger: logger}))
	tp, shutdown, err := tracing.Setup(ctx, tracing.Options{
		Endpoint: cfg.OTLPEndpoint, TracesEndpoint: cfg.OTLPTracesEndpoint,
		InstanceID: owner, Version: b.Version,
		Attributes: []attribute.KeyValue{attribute.String("compute.roles", strings.Join(cfg.Roles, ","))},
	})
	if err != nil {
		return observability{}, err
	}
	if tp != nil {
		logger.Info("tracing: spans exported over OTLP/HTTP", "endpoint", firstNonEmpty(cfg.OTLPTracesEndpoint, cfg.OTLPEndpoint))
	}
	return observability{registry: reg, loops: metrics.NewLoops(reg), tp: tp, shutdown: shutdown}, nil
}

// placementRejected is what the placer is told of every node it turns
// down: it counts them by filter (compute_placement_rejections_total),
// every filter from zero.
func (o observability) placementRejected() func(filter string) {
	filters := make([]string, len(placement.Filters))
	for i, f := range placement.Filters {
		filters[i] = string(f)
	}
	o.loops.StartFilters(filters...)
	return o.loops.PlacementRejected
}

// buildOf is the build the process runs: what the linker stamped (make
// dist, the Dockerfile), else what runtime/debug recorded.
func buildOf() metrics.Build {
	b := metrics.ReadBuild()
	if version != "" {
		b.Version = version
	}
	if commit != "" {
		b.Commit = commit
	}
	return b
}

// worker has w count its items and trace them.
func (o observability) worker(w *workqueue.Worker) {
	w.Metrics, w.Tracer = o.loops, tracing.Tracer(o.tp)
}

// dispatcher has d count its batches and trace them.
func (o observability) dispatcher(d *outbox.Dispatcher) {
	d.Metrics, d.Tracer = o.loops, tracing.Tracer(o.tp)
}

// gateway has g count the daemon sessions it opens and export how many it
// holds.
func (o observability) gateway(g *gateway.Gateway) {
	g.Metrics = metrics.NewGateway(o.registry, g.SessionCount)
}

// close flushes the spans still buffered, for at most five seconds.
func (o observability) close(logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := o.shutdown(ctx); err != nil {
		logger.Warn("tracing: flush at shutdown", "err", err)
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// agentLogger is the node daemon's logger: the server's JSON lines
// (newLogger), at COMPUTE_LOG_LEVEL (info when unset), which must be a
// level as the server's must; agent.Run adds the node id to each line.
func agentLogger() (*slog.Logger, error) {
	level, ok := os.LookupEnv(config.Prefix + "_LOG_LEVEL")
	if !ok {
		level = "info"
	}
	if err := config.CheckLogLevel(level); err != nil {
		return nil, err
	}
	return newLogger(level), nil
}
