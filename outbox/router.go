package outbox

import (
	"log/slog"
	"math"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/components/metrics"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/message/router/middleware"
	"github.com/prometheus/client_golang/prometheus"
)

// RouterMetricsSubsystem names the Router's metrics: watermill's own
// (components/metrics) on the process's registry, under
// compute_router_* (docs/operations/observability.md).
const RouterMetricsSubsystem = "router"

// routerBuckets reach past RetryRound: one handler run includes its
// retries.
var routerBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// NewRouter returns the watermill Router that runs a process's handlers of
// the log, each fed by a Subscriber. Every handler gets, outermost first,
// watermill's Prometheus middleware on reg (nil: no metrics), which times
// each handler run by handler and success, and Recoverer, which turns a
// panic into an error. What a handler does with errors is its own
// middleware: MustDeliver or SkipAfter. Watermill's own lifecycle lines are
// logged at debug.
//
// Only watermill's handler middleware is installed, not its subscriber
// decorator: that one waits for each message's Ack in a goroutine of its
// own, which would outlive a message the Subscriber abandons at shutdown,
// and the dispatcher already counts what each sink handled
// (compute_outbox_dispatched_events_total).
func NewRouter(logger *slog.Logger, reg prometheus.Registerer) (*message.Router, error) {
	r, err := message.NewRouter(message.RouterConfig{}, WatermillLogger(logger))
	if err != nil {
		return nil, err
	}
	if reg != nil {
		b := RouterMetrics(reg)
		b.HandlerBuckets = routerBuckets
		r.AddMiddleware(b.NewRouterMiddleware().Middleware)
	}
	r.AddMiddleware(middleware.Recoverer)
	return r, nil
}

// RouterMetrics is watermill's metrics builder on reg, under
// compute_router_*; a handler decorates the publisher it calls with its
// DecoratePublisher to time each publish (compute_router_publish_time_seconds).
func RouterMetrics(reg prometheus.Registerer) metrics.PrometheusMetricsBuilder {
	return metrics.NewPrometheusMetricsBuilder(reg, "compute", RouterMetricsSubsystem)
}

// WatermillLogger adapts logger for watermill, its info lines (handlers
// added, started, closed) lowered to debug: the process logs its own
// start.
func WatermillLogger(logger *slog.Logger) watermill.LoggerAdapter {
	if logger == nil {
		logger = slog.Default()
	}
	return watermill.NewSlogLoggerWithLevelMapping(logger, map[slog.Level]slog.Level{slog.LevelInfo: slog.LevelDebug})
}

// RetryRound bounds one round of MustDeliver's retries: past it the
// handler's error goes back to the Router, which Nacks.
const RetryRound = time.Minute

// MustDeliver is the middleware of a handler that may never skip an event
// (the JetStream forwarder): a failing handler is retried in place with
// exponential back-off from initial to at most maxInterval, for RetryRound;
// then the error Nacks the message and the Subscriber sends the same event
// again after its NackDelay, for another round. It never gives up and
// there is no poison queue: the dispatcher saves no cursor past an event
// the handler did not accept, so the sink stalls rather than loses it,
// and its lag shows it (compute_outbox_sink_lag_seconds, /readyz). Every
// failure is logged at warn. A panic, turned into an error by the
// Router's Recoverer outside this middleware, is not retried in place: it
// Nacks at once and is redelivered.
func MustDeliver(initial, maxInterval time.Duration, logger *slog.Logger) message.HandlerMiddleware {
	if logger == nil {
		logger = slog.Default()
	}
	return middleware.Retry{
		MaxRetries:      math.MaxInt32, // bounded by MaxElapsedTime instead
		InitialInterval: initial, MaxInterval: maxInterval, Multiplier: 2, RandomizationFactor: 0.2,
		MaxElapsedTime: RetryRound,
		ShouldRetry: func(p middleware.RetryParams) bool {
			logger.Warn("handler failed; retrying", "retry", p.RetryNum+1, "wait", p.Delay.String(), "err", p.Err)
			return true
		},
	}.Middleware
}

// SkipAfter is the middleware of a handler that may skip an event it
// keeps failing on: it retries retries times with back-off from initial,
// then publishes the message to topic on poison (with watermill's
// reason_poisoned metadata) and acks it, so the sink moves on. The event
// itself stays in the log for its retention, at the position the poisoned
// message carries. No handler of compute serve may skip yet; this is the
// policy for one that may (an in-process cache, a notification).
func SkipAfter(retries int, initial time.Duration, poison message.Publisher, topic string) ([]message.HandlerMiddleware, error) {
	pq, err := middleware.PoisonQueue(poison, topic)
	if err != nil {
		return nil, err
	}
	retry := middleware.Retry{MaxRetries: retries, InitialInterval: initial, Multiplier: 2, MaxElapsedTime: RetryRound}
	return []message.HandlerMiddleware{pq, retry.Middleware}, nil
}
