package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/tracing"
	"github.com/bettercompute/compute/queries"
)

// readyTimeout bounds the whole /readyz self-check: a probe that hangs is
// worse than one that says "unavailable".
const readyTimeout = 2 * time.Second

// CheckStatus is the verdict of one readiness check and of /readyz as a
// whole.
type CheckStatus string

// The verdicts, from best to worst.
const (
	CheckOK          CheckStatus = "ok"
	CheckDegraded    CheckStatus = "degraded"    // serving, but an operator should look
	CheckUnavailable CheckStatus = "unavailable" // cannot serve
)

// CheckResult is one entry of /readyz's "checks" object. Seconds carries a
// measured duration where the check has one (clock skew, frontier lag).
type CheckResult struct {
	Status  CheckStatus `json:"status"`
	Seconds *float64    `json:"seconds,omitempty"`
	Message string      `json:"message,omitempty"`
}

// ReadyCheck is one named self-check of /readyz. When a Critical check is
// not ok the process is unready (503) and load balancers stop sending it
// traffic; any other failing check only marks it degraded (still 200).
// Run gets a context bounded by readyTimeout. Checks and their messages
// are shown only to operators and on the internal listener; anyone else
// gets the verdict alone.
type ReadyCheck struct {
	Name     string
	Critical bool
	Run      func(ctx context.Context) CheckResult
}

// Readiness is the body of /readyz. On 503 it also carries the standard
// error envelope, so clients that only understand that still see why.
// Checks, and the failing checks' names in the error, are there only for
// an operator token or on the internal listener: the rest of the world
// learns ready or not, not how the process is built or what is failing.
type Readiness struct {
	Status CheckStatus            `json:"status"`
	Checks map[string]CheckResult `json:"checks,omitempty"`
	Error  *ErrorDetail           `json:"error,omitempty"`
}

// healthz answers whether the process is alive and serving HTTP. It checks
// nothing else on purpose: a liveness probe that failed while the database
// was down would restart every replica during a database outage.
func healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// Probes is the operations handler of a process without the api role:
// /healthz, /readyz (database, clock.skew and d.ReadyChecks, with every
// detail) and /metrics, all without a token, for main to serve on the
// internal listener (COMPUTE_METRICS_ADDR) only. With it a worker-,
// dispatcher- or gateway-only process reports its clock skew as the API
// does. d.Pool and d.Clock are required; d.Auth is not used.
func Probes(d Deps) http.Handler {
	if d.Pool == nil || d.Clock == nil {
		panic("httpapi.Probes: Deps.Pool and Deps.Clock are required")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
		d.Registry.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = errorHandler(d.Logger)
	e.GET("/healthz", healthz)
	e.GET("/readyz", readyz(d, nil)) // internal only: the gate is never asked
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{Registry: d.Registry})))
	return InternalHandler(e)
}

// readyz runs every check concurrently: 200 while all critical checks pass
// (status ok or degraded), 503 otherwise. It reports each check to an
// operator token and on the internal listener, the verdict alone to anyone
// else (a probe needs no token).
func readyz(d Deps, gate *authGate) echo.HandlerFunc {
	pool := d.ProbePool
	if pool == nil {
		pool = d.Pool
	}
	checks := append([]ReadyCheck{
		databaseCheck(pool, d.Logger),
		clockSkewCheck(pool, d.Clock, d.Logger),
	}, d.ReadyChecks...)
	return func(c echo.Context) error {
		detailed := accessOf(c.Request().Context()).internal
		if !detailed {
			actor, ok := gate.optionalActor(c)
			detailed = ok && actor.Role == core.RoleOperator
		}
		ctx, cancel := context.WithTimeout(c.Request().Context(), readyTimeout)
		defer cancel()
		body := runChecks(ctx, checks)
		if !detailed {
			body.Checks = nil
			if body.Error != nil {
				body.Error = &ErrorDetail{Code: core.CodeUnavailable, Message: "not ready"}
			}
		}
		if body.Status == CheckUnavailable {
			return c.JSON(http.StatusServiceUnavailable, body)
		}
		return c.JSON(http.StatusOK, body)
	}
}

func runChecks(ctx context.Context, checks []ReadyCheck) Readiness {
	results := make([]CheckResult, len(checks))
	var wg sync.WaitGroup
	for i, chk := range checks {
		wg.Go(func() { results[i] = chk.Run(ctx) })
	}
	wg.Wait()

	body := Readiness{Status: CheckOK, Checks: make(map[string]CheckResult, len(checks))}
	var failed []string
	for i, chk := range checks {
		r := results[i]
		body.Checks[chk.Name] = r
		if r.Status == CheckOK {
			continue
		}
		if chk.Critical {
			body.Status = CheckUnavailable
			failed = append(failed, chk.Name)
		} else if body.Status == CheckOK {
			body.Status = CheckDegraded
		}
	}
	if body.Status == CheckUnavailable {
		msg := "not ready: failing checks:"
		for _, name := range failed {
			msg += " " + name
		}
		body.Error = &ErrorDetail{Code: core.CodeUnavailable, Message: msg}
	}
	return body
}

// databaseCheck is critical: without PostgreSQL nothing can be served. It
// pings and reads compute_now(), which proves the migrations ran too. A
// run of failed checks is logged once as it starts, once a minute and once
// when the check passes again (tracing.FailureStreak): a load balancer
// probes every few seconds, and a line per probe buried the rest of an
// outage's log.
func databaseCheck(pool *pgxpool.Pool, logger *slog.Logger) ReadyCheck {
	failures := tracing.NewFailureStreak(logger, "readyz: database check", slog.LevelWarn)
	return ReadyCheck{Name: "database", Critical: true, Run: func(ctx context.Context) CheckResult {
		err := pool.Ping(ctx)
		if err == nil {
			_, err = queries.New(pool).ClockNow(ctx)
		}
		if err != nil {
			failures.Failed(err)
			return CheckResult{Status: CheckUnavailable, Message: CheckFailure(err, "database unreachable")}
		}
		failures.Succeeded()
		return CheckResult{Status: CheckOK}
	}}
}

// clockSkewCheck compares the process's business clock with compute_now().
// Drift beyond clock.MaxSkew means leases and deadlines judged in Go may
// disagree with SQL: degraded, not down, since SQL stays the authority.
// compute_now() is compared with the middle of the round trip so query
// latency does not count as skew. A failed read is logged as
// databaseCheck's are, once per run of them.
func clockSkewCheck(pool *pgxpool.Pool, clk *clock.Clock, logger *slog.Logger) ReadyCheck {
	failures := tracing.NewFailureStreak(logger, "readyz: clock.skew check", slog.LevelWarn)
	return ReadyCheck{Name: "clock.skew", Run: func(ctx context.Context) CheckResult {
		before := clk.Now()
		dbNow, err := queries.New(pool).ClockNow(ctx)
		after := clk.Now()
		if err != nil {
			failures.Failed(err)
			return CheckResult{Status: CheckUnavailable, Message: CheckFailure(err, "could not read compute_now()")}
		}
		failures.Succeeded()
		skew := before.Add(after.Sub(before) / 2).Sub(dbNow)
		secs := math.Round(skew.Seconds()*1000) / 1000
		r := CheckResult{Status: CheckOK, Seconds: &secs}
		if skew >= clock.MaxSkew || skew <= -clock.MaxSkew {
			r.Status = CheckDegraded
			r.Message = "process clock differs from compute_now() by more than " + clock.MaxSkew.String()
		}
		return r
	}}
}

// CheckFailure is the message of a check that failed on an error: the
// generic words, and a timeout said as such. The error itself (a socket
// path, a user name, a host) stays out of /readyz's body; the failing
// loops log it.
func CheckFailure(err error, generic string) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return generic + ": timed out after " + readyTimeout.String()
	}
	return generic
}
