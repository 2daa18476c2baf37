package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/queries"
	"github.com/bettercompute/compute/webhook"
)

const (
	// admissionEvery is how often an API process reads the sinks' backlog
	// and moves its command bound one step: from the pool's size down to
	// one in about half a second of lag, as fast back up once it is gone.
	admissionEvery = 100 * time.Millisecond
	// sinkActiveWithin: a sink whose cursor has not moved for this long
	// is taken as stopped (its process is down or it has nothing to do),
	// and its backlog does not hold the API back.
	sinkActiveWithin = 10 * time.Second
)

// commandAdmission builds the API's command admission (httpapi.
// CommandAdmission) and starts following the sinks' backlog, read through
// q, under goRun until ctx ends. Nil when COMPUTE_SINK_LAG_TARGET is 0.
func commandAdmission(ctx context.Context, cfg config.Config, q *queries.Service, logger *slog.Logger,
	goRun func(func())) *httpapi.CommandAdmission {
	if cfg.SinkLagTarget <= 0 {
		return nil
	}
	adm := httpapi.NewCommandAdmission(int(cfg.MaxConns))
	goRun(func() {
		tick := time.NewTicker(admissionEvery)
		defer tick.Stop()
		adm.Follow(ctx, tick.C, func(ctx context.Context) (time.Duration, error) {
			b, err := q.SinkBacklog(ctx, webhook.KindDeliver, sinkActiveWithin)
			return max(b.DeliveryWait, b.SinkLag), err
		}, cfg.SinkLagTarget, logger)
	})
	return adm
}
