package main

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/queries"
)

// frontierLagWarn is the outbox frontier lag past which /readyz reports
// degraded: some transaction is holding every event reader back.
const frontierLagWarn = 10 * time.Second

// readyChecks are the /readyz checks of every process beyond the
// database and clock.skew: the outbox frontier, and the JetStream sink's
// lag when it is configured. A process running the sink adds its
// connection's (startJetStream).
func readyChecks(cfg config.Config, pool *pgxpool.Pool, clk *clock.Clock) []httpapi.ReadyCheck {
	checks := []httpapi.ReadyCheck{frontierCheck(pool)}
	if cfg.NATSURL != "" {
		checks = append(checks, jetStreamLagCheck(pool, clk))
	}
	return checks
}

// frontierCheck reports the outbox frontier lag in /readyz: a transaction
// held open holds every event reader back, cluster-wide.
func frontierCheck(pool *pgxpool.Pool) httpapi.ReadyCheck {
	return httpapi.ReadyCheck{Name: "outbox.frontier", Run: func(ctx context.Context) httpapi.CheckResult {
		lag, err := queries.New(pool).FrontierLag(ctx, time.Now)
		if err != nil {
			return httpapi.CheckResult{Status: httpapi.CheckDegraded, Message: httpapi.CheckFailure(err, "could not read the outbox frontier")}
		}
		secs := lag.Age.Seconds()
		res := httpapi.CheckResult{Status: httpapi.CheckOK, Seconds: &secs}
		if lag.Age > frontierLagWarn {
			res.Status, res.Message = httpapi.CheckDegraded, "held back by "+lag.Holder
		}
		return res
	}}
}
