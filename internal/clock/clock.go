// Package clock gives Go code the database's idea of business time.
//
// SQL reads compute_now(); Go must agree with it, or a lease that SQL thinks
// expired would still look valid to the process. A Clock is therefore
// anchored to compute_now(): it is sampled at start, at every lease renewal
// and every AnchorEvery by Run (which every process runs, whatever its
// roles), and between samples it advances with the process's monotonic
// clock. In tests compute_now() is simulated, and the Clock follows it.
package clock

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/bettercompute/compute/internal/tracing"
)

// MaxSkew is the drift between the process and the database past which the
// process logs ClockSkew and /readyz reports it.
const MaxSkew = time.Second

// AnchorEvery is how often Run re-anchors a process's clock: the lease
// renewal period of the specification, so that a process holding no lease
// (an API-only or a gateway-only one) is anchored as often as one that
// renews leases.
const AnchorEvery = 5 * time.Second

// Source reads compute_now(). *db.Queries satisfies it.
type Source interface {
	ClockNow(ctx context.Context) (time.Time, error)
}

// Clock is business time anchored to compute_now(). It is safe for
// concurrent use.
type Clock struct {
	logger *slog.Logger
	local  func() time.Time // the process clock; replaceable in tests

	mu     sync.Mutex
	offset time.Duration // database time minus local time at the last anchor
	skew   time.Duration // how far Now() was from the database at the last anchor
}

// New returns a Clock that reads the process clock until its first anchor.
func New(logger *slog.Logger) *Clock {
	if logger == nil {
		logger = slog.Default()
	}
	return &Clock{logger: logger, local: time.Now}
}

// Now is business time: the process clock corrected by the last anchor.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.local().Add(c.offset)
}

// Skew is how far this clock had drifted from compute_now() when it was last
// anchored (positive: the process ran ahead).
func (c *Clock) Skew() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.skew
}

// Anchor records that compute_now() read dbNow just now. It measures the
// drift since the previous anchor, logs ClockSkew past MaxSkew, and re-anchors.
func (c *Clock) Anchor(dbNow time.Time) time.Duration {
	c.mu.Lock()
	local := c.local()
	first := c.offset == 0 && c.skew == 0
	skew := local.Add(c.offset).Sub(dbNow)
	c.offset = dbNow.Sub(local)
	if first {
		skew = 0
	}
	c.skew = skew
	c.mu.Unlock()
	if skew > MaxSkew || skew < -MaxSkew {
		c.logger.Warn("ClockSkew", "skew", skew.String(), "db_now", dbNow)
	}
	return skew
}

// Sample reads compute_now() from src and anchors to it.
func (c *Clock) Sample(ctx context.Context, src Source) (time.Duration, error) {
	now, err := src.ClockNow(ctx)
	if err != nil {
		return 0, err
	}
	return c.Anchor(now), nil
}

// Run re-anchors the clock to src every every (AnchorEvery when zero) until
// ctx ends. Every process runs it, whatever its roles: the clock used to be
// re-anchored only at the worker's lease renewals, so a process without a
// worker drifted from compute_now() for as long as it ran. A failed sample
// is logged and the clock keeps its last anchor; a run of them (a database
// outage) once as it starts, once a minute and once when a sample works
// again (tracing.FailureStreak).
func (c *Clock) Run(ctx context.Context, src Source, every time.Duration) {
	if every <= 0 {
		every = AnchorEvery
	}
	failures := tracing.NewFailureStreak(c.logger, "clock: re-anchor to compute_now()", slog.LevelWarn)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		switch _, err := c.Sample(ctx, src); {
		case err == nil:
			failures.Succeeded()
		case ctx.Err() == nil:
			failures.Failed(err)
		}
	}
}
