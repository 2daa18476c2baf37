package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/metrics"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/queries"
)

// startReadReplica connects the API's read-model queries to the hot
// standby at cfg.ReadDatabaseURL (COMPUTE_READ_DATABASE_URL), measures its
// lag every second from now on, and reports it in /metrics and /readyz
// (degraded, never unready: reads fall back to the primary). It returns
// the /readyz check; the replica's pool closes when ctx ends.
func startReadReplica(ctx context.Context, cfg config.Config, svc *queries.Service, reg prometheus.Registerer,
	logger *slog.Logger, goRun func(func())) (httpapi.ReadyCheck, error) {
	pool, err := pg.Connect(ctx, cfg.ReadDatabaseURL, replicaPoolOptions(cfg))
	if err != nil {
		return httpapi.ReadyCheck{}, fmt.Errorf("read replica: %w", err)
	}
	lag := prometheus.NewGauge(prometheus.GaugeOpts{Name: metrics.NameReadReplicaLag,
		Help: "How far the read replica is behind the primary, as of its last check (seconds)."})
	in := prometheus.NewGauge(prometheus.GaugeOpts{Name: metrics.NameReadReplicaInRotation,
		Help: "1 while the read replica serves the read-model queries, 0 while they go to the primary."})
	if reg != nil {
		reg.MustRegister(lag, in)
	}
	r := &queries.Replica{Pool: pool, Primary: svc.Pool, MaxLag: cfg.ReadMaxLag, Logger: logger.With("component", "read-replica"),
		Observe: func(l time.Duration, inRotation bool) {
			lag.Set(l.Seconds())
			if inRotation {
				in.Set(1)
			} else {
				in.Set(0)
			}
		}}
	svc.Replica = r
	goRun(func() {
		r.Run(ctx, queries.DefaultReplicaCheckEvery)
		pool.Close()
	})
	check := httpapi.ReadyCheck{Name: "read_replica", Run: func(context.Context) httpapi.CheckResult {
		secs := r.Lag().Seconds()
		res := httpapi.CheckResult{Status: httpapi.CheckOK, Seconds: &secs}
		if !r.InRotation() {
			res.Status, res.Message = httpapi.CheckDegraded, "the read replica is out of rotation: reads go to the primary"
		}
		return res
	}}
	return check, nil
}

// replicaPoolOptions is the standby's pool: it serves the api role's
// queries, which on the primary have a pool of COMPUTE_READ_MAX_CONNS, so
// it has as many sessions; commands never go to it.
func replicaPoolOptions(cfg config.Config) pg.PoolOptions {
	return pg.PoolOptions{MaxConns: cfg.ReadMaxConns, PgBouncer: cfg.PgBouncer, ApplicationName: "compute-read"}
}
