package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/bettercompute/compute/core"
)

// probeRoutes are polled every few seconds by orchestrators and scrapers;
// their access lines are logged at debug level so they do not drown the rest.
var probeRoutes = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// accessLog writes one structured line per request: method, path, route,
// status, latency, request id, and the error code and token id when there
// are any. It hands a handler's error to the error handler first
// (HandleError), so the status it logs is the one the client received.
// The path is logged with anything shaped like a secret redacted (a token
// pasted where its id belongs: /v1/tokens/bc_[redacted]); the query string
// is not logged at all (a stream ticket travels there).
func accessLog(logger *slog.Logger) echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		HandleError:     true,
		LogLatency:      true,
		LogMethod:       true,
		LogURIPath:      true,
		LogRoutePath:    true,
		LogRequestID:    true,
		LogStatus:       true,
		LogRemoteIP:     true,
		LogResponseSize: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			level := slog.LevelInfo
			switch {
			case v.RoutePath == "/readyz" && v.Status == http.StatusServiceUnavailable:
				// Not ready is /readyz's answer, not a failure of it: a load
				// balancer polls it every second through an outage, and the
				// checks log why, once per outage (tracing.FailureStreak).
				level = slog.LevelDebug
			case v.Status >= 500:
				level = slog.LevelError
			case probeRoutes[v.RoutePath] && v.Status < 400:
				level = slog.LevelDebug
			}
			attrs := []slog.Attr{
				slog.String("method", v.Method),
				slog.String("path", core.RedactSecrets(v.URIPath)),
				slog.String("route", v.RoutePath),
				slog.Int("status", v.Status),
				slog.Duration("latency", v.Latency),
				slog.String("request_id", v.RequestID),
				slog.String("remote_ip", v.RemoteIP),
				slog.Int64("bytes_out", v.ResponseSize),
			}
			if code, ok := c.Get(ctxKeyErrorCode).(core.Code); ok {
				attrs = append(attrs, slog.String("code", string(code)))
			}
			if actor, ok := c.Get(ctxKeyActor).(core.Actor); ok {
				attrs = append(attrs, slog.String("token_id", actor.TokenID))
			}
			logger.LogAttrs(c.Request().Context(), level, "http request", attrs...)
			return nil
		},
	})
}
