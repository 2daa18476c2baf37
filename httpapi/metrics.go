package httpapi

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bettercompute/compute/core"
)

// httpMetrics counts requests and measures their latency by method, route
// and status. The route is echo's pattern (/v1/tokens/:id), never the raw
// path, so ids do not explode the number of series.
type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// Metric names, part of the operations contract (dashboards, alerts).
const (
	metricRequests = "compute_http_requests_total"
	metricLatency  = "compute_http_request_duration_seconds"
)

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	labels := []string{"method", "route", "status"}
	return &httpMetrics{
		requests: registerOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricRequests,
			Help: "HTTP requests served, by method, route pattern and status.",
		}, labels)),
		latency: registerOrReuse(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    metricLatency,
			Help:    "HTTP request latency in seconds, by method, route pattern and status.",
			Buckets: prometheus.DefBuckets,
		}, labels)),
	}
}

// registerOrReuse registers c, or returns the identical collector already
// registered, so building a second server on one registry does not panic.
func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

func (m *httpMetrics) middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			route := c.Path()
			if route == "" {
				route = "unmatched"
			}
			labels := prometheus.Labels{
				"method": metricMethod(c.Request().Method),
				"route":  route,
				"status": strconv.Itoa(c.Response().Status),
			}
			m.requests.With(labels).Inc()
			m.latency.With(labels).Observe(time.Since(start).Seconds())
			return err
		}
	}
}

// metricMethod folds methods nobody routes to into one label value, so a
// client sending made-up methods cannot create series.
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

// metrics serves h, the Prometheus exposition, to those who may read it:
// anyone on the internal listener (ServerConfig.InternalAddr), the bearer
// of the listener's metrics token (ServerConfig.MetricsToken), or an
// operator. Anyone else is 401 (no or a bad token) or 403 (another role):
// metrics describe the whole fleet's traffic.
func metrics(gate *authGate, h http.Handler) echo.HandlerFunc {
	return func(c echo.Context) error {
		acc := accessOf(c.Request().Context())
		if !acc.internal {
			token, err := requestBearer(c.Request())
			if err != nil {
				return err
			}
			if acc.metricsToken == "" || subtle.ConstantTimeCompare([]byte(token), []byte(acc.metricsToken)) != 1 {
				actor, err := gate.actor(c, token)
				if err != nil {
					return err
				}
				if actor.Role != core.RoleOperator {
					return core.Errorf(core.CodePermissionDenied, "metrics need the metrics token or an operator token")
				}
			}
		}
		h.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}
