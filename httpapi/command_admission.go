package httpapi

import (
	"container/list"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/tracing"
)

// DefaultSinkLagTarget is the backlog of the event sinks above which an API
// process admits fewer commands at once (COMPUTE_SINK_LAG_TARGET's default;
// see CommandAdmission.Step and docs/decisions/0017-command-admission.md).
const DefaultSinkLagTarget = 70 * time.Millisecond

// CommandAdmission bounds how many state-changing /v1 requests (POST, PUT,
// PATCH, DELETE) this process runs at once, and lowers the bound while the
// event sinks fall behind.
//
// Why: on a saturated database server the commands and the event sinks
// (the projections, the webhook scheduler) share its CPU. With every API
// connection busy, the sinks' statements queue behind the commands', and
// webhooks and read models fall behind by as much as the API is loaded.
// Admitting fewer commands at once while the sinks lag gives them that CPU
// back; when they have caught up, the bound rises again to the API pool's
// size, so an API whose sinks keep up runs as if there were no bound
// (docs/decisions/0017-command-admission.md). What "lag" is, main decides
// (Follow's read).
//
// A command over the bound waits in this process, first come first served,
// within its deadline (Deps.CommandTimeout); past it the answer is 503
// UNAVAILABLE with Retry-After, and nothing was written.
type CommandAdmission struct {
	max int

	mu       sync.Mutex
	limit    int
	inFlight int
	// waiters are the commands waiting for a slot, oldest first: each is
	// a channel closed when a slot is handed to it.
	waiters list.List
}

// NewCommandAdmission admits at most size commands at once (at least one),
// the size of the pool the commands run on: beyond it they would only
// queue for a connection.
func NewCommandAdmission(size int) *CommandAdmission {
	n := max(size, 1)
	return &CommandAdmission{max: n, limit: n}
}

// Limit is how many commands are admitted at once now.
func (a *CommandAdmission) Limit() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.limit
}

// InFlight is how many admitted commands are running.
func (a *CommandAdmission) InFlight() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.inFlight
}

// Step moves the bound one step on a reading of the sinks' backlog: down by
// one (never below one) when the backlog is over target, up by one (never
// above the maximum) when it is under half of target, else it stays, so that
// a backlog near the target does not make the bound swing. It returns the
// new bound.
func (a *CommandAdmission) Step(backlog, target time.Duration) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case backlog > target:
		a.limit = max(a.limit-1, 1)
	case backlog < target/2:
		a.limit = min(a.limit+1, a.max)
		a.grantLocked()
	}
	return a.limit
}

// open lifts the bound to the maximum.
func (a *CommandAdmission) open() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.limit = a.max
	a.grantLocked()
}

// Follow steps the bound on every tick with the backlog read returns, until
// ctx ends. A failed read opens the bound fully: a backlog that cannot be
// read must not hold the API back (an unreachable database is /readyz's to
// report, and the commands will fail on their own). A run of failed reads
// is logged as a tracing.FailureStreak (as it starts, a reminder a minute,
// as it ends), not on every tick: the ticks come ten a second, and a
// database outage would otherwise bury the rest of the log.
func (a *CommandAdmission) Follow(ctx context.Context, ticks <-chan time.Time, read func(context.Context) (time.Duration, error),
	target time.Duration, logger *slog.Logger) {
	last := a.Limit()
	streak := tracing.NewFailureStreak(logger, "command admission: reading the sinks' backlog", slog.LevelWarn)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		backlog, err := read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			streak.Failed(err, "meanwhile", "commands admitted up to the pool's size")
			a.open()
			continue
		}
		streak.Succeeded()
		if now := a.Step(backlog, target); now != last {
			logger.Debug("command admission", "limit", now, "backlog", backlog)
			last = now
		}
	}
}

// acquire takes a slot, waiting behind the commands that came first, or
// returns ctx's error when ctx ends first.
func (a *CommandAdmission) acquire(ctx context.Context) error {
	a.mu.Lock()
	if a.inFlight < a.limit && a.waiters.Len() == 0 {
		a.inFlight++
		a.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	el := a.waiters.PushBack(ready)
	a.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
	}
	a.mu.Lock()
	select {
	case <-ready: // handed a slot as ctx ended: give it back
		a.inFlight--
		a.grantLocked()
	default:
		a.waiters.Remove(el)
	}
	a.mu.Unlock()
	return ctx.Err()
}

// release gives a slot back, to the oldest waiter if there is one.
func (a *CommandAdmission) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inFlight--
	a.grantLocked()
}

// grantLocked hands free slots to the oldest waiters.
func (a *CommandAdmission) grantLocked() {
	for a.inFlight < a.limit && a.waiters.Len() > 0 {
		ready := a.waiters.Remove(a.waiters.Front()).(chan struct{})
		a.inFlight++
		close(ready)
	}
}

// middleware admits each state-changing request before it runs; reads and
// event streams pass. A nil admission admits everything.
func (a *CommandAdmission) middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if a == nil || !isCommandMethod(c.Request().Method) {
				return next(c)
			}
			if err := a.acquire(c.Request().Context()); err != nil {
				return core.Wrap(core.CodeUnavailable, err,
					"the server is admitting fewer commands while its event delivery catches up; retry")
			}
			defer a.release()
			return next(c)
		}
	}
}

// Metric names of the admission, part of the operations contract.
const (
	metricCommandLimit    = "compute_http_command_limit"
	metricCommandInFlight = "compute_http_commands_in_flight"
)

// register adds the admission's gauges to reg.
func (a *CommandAdmission) register(reg prometheus.Registerer) {
	registerOrReuse(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: metricCommandLimit,
		Help: "How many state-changing requests this process admits at once (lowered while the event sinks lag).",
	}, func() float64 { return float64(a.Limit()) }))
	registerOrReuse(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: metricCommandInFlight,
		Help: "State-changing requests running in this process.",
	}, func() float64 { return float64(a.InFlight()) }))
}
