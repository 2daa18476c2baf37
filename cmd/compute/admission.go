package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
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
	// slowAttempt: while a webhook attempt has been in flight longer than
	// this, deliveries waiting for a worker may be waiting behind a slow
	// receiver, which a slower API does not help: their wait is not
	// counted then. A local receiver answers within milliseconds; under
	// the benchmark's saturating load, attempts took up to a few hundred.
	slowAttempt = time.Second
)

// admissionSinks are the sinks whose work is the database's: the
// projections and the webhook scheduler. The sinks that wait on another
// service (billing, JetStream) are left out: a slow receiver is not helped
// by a slower API, and must not be able to slow it.
var admissionSinks = []string{projections.NameReservations, projections.NameFleet, projections.NameDeviceHolders,
	projections.NameUsageWindows, webhook.SinkID}

// commandAdmission builds the API's command admission (httpapi.
// CommandAdmission) and starts following the sinks' backlog, read through
// q, under goRun until ctx ends. Nil when COMPUTE_SINK_LAG_TARGET is 0.
//
// The backlog is the larger of how long visible events have waited for the
// slowest working sink of admissionSinks (outbox.HandlingLag, at the
// resolution of a tick) and how long the oldest due webhook delivery has
// waited for a worker (not counted behind a slow attempt: slowAttempt).
// Neither counts the wait for the outbox frontier, which concurrent
// commands cause whether or not the sinks keep up: counted, it held an API
// without webhooks to 55-80 % of its rate
// (docs/decisions/0017-command-admission.md).
func commandAdmission(ctx context.Context, cfg config.Config, q *queries.Service, logger *slog.Logger,
	goRun func(func())) *httpapi.CommandAdmission {
	if cfg.SinkLagTarget <= 0 {
		return nil
	}
	adm := httpapi.NewCommandAdmission(int(cfg.MaxConns))
	goRun(func() {
		tick := time.NewTicker(admissionEvery)
		defer tick.Stop()
		var handling outbox.HandlingLag
		backlog := queries.BacklogQuery{Sinks: admissionSinks, Active: sinkActiveWithin, DeliveryKind: webhook.KindDeliver,
			SlotHold: webhookConfig(cfg).SlotHold(), SlowAttempt: slowAttempt}
		adm.Follow(ctx, tick.C, func(ctx context.Context) (time.Duration, error) {
			b, err := q.SinkBacklog(ctx, backlog)
			if err != nil {
				return 0, err
			}
			return max(b.DeliveryWait, handling.Observe(time.Now(), b.Head, b.Slowest, b.HasSlowest)), nil
		}, cfg.SinkLagTarget, logger)
	})
	return adm
}
