package main

import (
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/console"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/config"
)

// listenerLimits are the configured limits every HTTP listener shares.
func listenerLimits(cfg config.Config) httpapi.ServerConfig {
	return httpapi.ServerConfig{
		ReadHeaderTimeout: cfg.HTTPReadHeaderTimeout,
		ReadTimeout:       cfg.HTTPReadTimeout,
		WriteTimeout:      cfg.HTTPWriteTimeout,
		IdleTimeout:       cfg.HTTPIdleTimeout,
		MaxHeaderBytes:    cfg.HTTPMaxHeaderBytes,
		MaxConns:          cfg.HTTPMaxConns,
	}
}

// apiServer is the API listener on cfg.Addr, with the internal metrics
// listener on cfg.MetricsAddr when set (ListenAndServe starts both).
func apiServer(cfg config.Config, h http.Handler, logger *slog.Logger) *httpapi.Server {
	c := listenerLimits(cfg)
	c.MetricsToken, c.InternalAddr = cfg.MetricsToken, cfg.MetricsAddr
	if cfg.MetricsAddr != "" {
		logger.Info("metrics and readiness on the internal listener", "addr", cfg.MetricsAddr)
	}
	return httpapi.NewServer(cfg.Addr, h, c)
}

// gatewayServer is the daemons' listener on cfg.GatewayAddr. The timeouts
// bound the WebSocket handshake only: net/http clears a connection's
// deadlines when the session hijacks it.
func gatewayServer(cfg config.Config, h http.Handler) *httpapi.Server {
	return httpapi.NewServer(cfg.GatewayAddr, h, listenerLimits(cfg))
}

// consoleRoutes serves the web console at /ui/ (and redirects /ui to it) on
// the API listener, outside /v1: its files hold no data, and its pages read
// the API from the browser with the user's own token.
func consoleRoutes(r httpapi.Router) {
	h := echo.WrapHandler(console.Handler())
	for _, path := range []string{"/ui", "/ui/*"} {
		r.Echo.GET(path, h)
		r.Echo.HEAD(path, h)
	}
}
