// Package httpapi is the HTTP face of the control plane: one echo server
// with request ids, JSON access logs, a body limit, panic recovery and
// Prometheus metrics; one error envelope; bearer-token authentication; the
// health, metrics and OpenAPI endpoints; and the routes of each feature.
//
// Handlers here only translate: they bind and validate the request shape,
// call a command or a query with the authenticated actor, and write the
// result. Rules live in commands/ and in PostgreSQL, so they hold whatever
// the entry point.
package httpapi

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/clock"
)

// DefaultBodyLimit bounds a request body when Deps.BodyLimit is empty. API
// payloads are small JSON documents; anything larger is a mistake or abuse.
const DefaultBodyLimit = "1M"

// Deps is everything the HTTP layer needs from main. Pool, Commands, Clock and Auth
// are required.
type Deps struct {
	Pool *pgxpool.Pool
	// ProbePool is the pool /readyz's database and clock.skew checks run
	// on: a small one of its own, so that commands holding every
	// connection of Pool (waiting on a lock, a slow statement) do not make
	// a healthy database look unreachable to the load balancer. Nil means
	// Pool.
	ProbePool *pgxpool.Pool
	// Commands is the write side main built; New needs it for the
	// identity routes (tokens) and the stream tickets.
	Commands *commands.Handlers
	Clock    *clock.Clock
	Auth     Authenticator
	// Logger receives access logs and server errors; give it a JSON
	// handler in production. Nil means slog.Default().
	Logger *slog.Logger
	// BodyLimit is the largest request body accepted, in echo's notation
	// ("1M", "512K"). Empty means DefaultBodyLimit.
	BodyLimit string
	// Registry receives the HTTP metrics and is what GET /metrics serves.
	// Nil means a fresh registry with the Go and process collectors; a
	// registry given here gets only the HTTP metrics, the rest is main's.
	// Servers built on one registry share their HTTP metrics.
	Registry *prometheus.Registry
	// ReadyChecks are added to /readyz after the built-in database and
	// clock.skew checks (for example the outbox frontier lag).
	ReadyChecks []ReadyCheck
	// AuthFailureRate and AuthFailureBurst limit failed authentications
	// per client address: Burst failures in a row, then one per 1/Rate
	// seconds; past that, 429 RATE_LIMITED. Zero means
	// DefaultAuthFailureRate and DefaultAuthFailureBurst.
	AuthFailureRate  float64
	AuthFailureBurst int
	// ClientAddresses says which address a request's failed
	// authentication counts against: the peer's, or, from a trusted
	// proxy, the client's it forwarded (COMPUTE_TRUSTED_PROXIES). The
	// zero value trusts no proxy.
	ClientAddresses authn.ClientAddresses
	// CommandTimeout is the deadline of a state-changing /v1 request
	// (POST, PUT, PATCH, DELETE); past it the command's transaction is
	// cancelled and the answer is 503 UNAVAILABLE with Retry-After. Zero
	// means DefaultCommandTimeout.
	CommandTimeout time.Duration
	// Admission, when set, bounds how many state-changing /v1 requests
	// run at once (see CommandAdmission); its gauges go to Registry. Nil:
	// no bound but the pool's.
	Admission *CommandAdmission
	// CORSOrigins are the exact origins (scheme://host[:port]) whose pages
	// may call the API from a browser. Empty: no CORS headers at all.
	CORSOrigins []string
	// RateLimit is each API token's sustained rate, in requests per second
	// in this process, and RateBurst its bucket (0: twice the rate); past
	// it, 429 RATE_LIMITED. Every /v1 response carries RateLimit-* headers.
	// Zero RateLimit: no limit (main passes COMPUTE_RATE_LIMIT, off by
	// default). The buckets are per process.
	RateLimit float64
	RateBurst int
	// TracerProvider, when set, traces every request (a server span
	// joined to the caller's traceparent) and every command (a child span
	// named after its operation); see tracing.go. Nil: no tracing, and no
	// tracing middleware at all.
	TracerProvider trace.TracerProvider
}

// Router is what a feature's Routes function receives to register its
// routes.
type Router struct {
	// Echo is the root server, for the rare route that needs no token.
	Echo *echo.Echo
	// V1 is the /v1 group; every route on it is behind Authenticate, so
	// handlers may call ActorOf. Add RequireRole per route where needed.
	V1 *echo.Group
	// Deps are the server's dependencies, defaults filled in.
	Deps Deps
	// gate authenticates the /v1 group; routes outside it that take a
	// token of their own (join) count their failures against it too.
	gate *authGate
}

// Routes registers one feature's routes. Feature files define one each
// (see tokenRoutes) and main passes them to New; every route must also be
// described in docs/openapi.yaml, which a test checks.
type Routes func(r Router)

// New builds the server: middleware, error handler, the built-in routes
// (/healthz, /readyz, /metrics, /openapi.yaml, tokens, whoami and stream
// tickets), each of routes, and then / (rootRoutes). It panics on missing
// dependencies or an unparsable body limit: those are wiring bugs that
// must stop the process at start. Serve
// it with NewServer, which sets the timeouts and limits and decides who may
// read /metrics and the details of /readyz.
func New(d Deps, routes ...Routes) *echo.Echo {
	if d.Pool == nil || d.Commands == nil || d.Clock == nil || d.Auth == nil {
		panic("httpapi.New: Deps.Pool, Deps.Commands, Deps.Clock and Deps.Auth are required")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.BodyLimit == "" {
		d.BodyLimit = DefaultBodyLimit
	}
	if d.CommandTimeout <= 0 {
		d.CommandTimeout = DefaultCommandTimeout
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
		d.Registry.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	}

	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(d.Logger)
	// Only for e.Start; main serves e with NewServer, which sets these
	// and the rest of the limits (ServerConfig).
	e.Server.ReadHeaderTimeout = DefaultReadHeaderTimeout
	e.Server.ReadTimeout = DefaultReadTimeout
	e.Server.WriteTimeout = DefaultWriteTimeout
	e.Server.IdleTimeout = DefaultIdleTimeout
	e.Server.MaxHeaderBytes = DefaultMaxHeaderBytes

	// Outermost first. The request id comes before everything that logs,
	// then the request's span, so the access log line carries its trace id;
	// metrics wrap the access log so they see the status the error handler
	// wrote; recover sits inside the access log so a panic is logged as a
	// 500 with its request id.
	e.Use(
		requestID(),
		responseHeaders(),
		traceRequests(d.TracerProvider),
		newHTTPMetrics(d.Registry).middleware(),
		accessLog(d.Logger),
		middleware.RecoverWithConfig(middleware.RecoverConfig{
			StackSize:           8 << 10,
			DisableStackAll:     true,
			DisableErrorHandler: true, // the access log hands it to errorHandler
			LogErrorFunc: func(_ echo.Context, err error, stack []byte) error {
				return &panicError{value: err, stack: stack}
			},
		}),
		cors(d.CORSOrigins),
		middleware.BodyLimit(d.BodyLimit),
		strictQuery(),
		unescapeParams(),
		commandDeadline(d.CommandTimeout),
	)

	gate := newAuthGate(d)
	// The operations routes answer HEAD as GET without the body, as HTTP
	// asks of every GET resource: load balancers and uptime checks probe
	// with HEAD. The /v1 routes do not (a HEAD of the event stream would
	// hold its connection for the stream's life).
	for path, h := range map[string]echo.HandlerFunc{
		"/healthz": healthz,
		"/readyz":  readyz(d, gate),
		"/metrics": metrics(gate, promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{
			Registry:          d.Registry,
			EnableOpenMetrics: true,
			ErrorLog:          slog.NewLogLogger(d.Logger.Handler(), slog.LevelError),
		})),
		"/openapi.yaml": openAPI,
	} {
		e.GET(path, h)
		e.HEAD(path, h)
	}

	limiter := newTokenRateLimiter(d.RateLimit, d.RateBurst)
	if d.Admission != nil {
		d.Admission.register(d.Registry)
	}
	// Admission after authentication and the rate limit: a request that
	// is refused anyway never waits for, or holds, a command's slot.
	r := Router{Echo: e, V1: e.Group("/v1", gate.middleware(), limiter.middleware(), readsTakeNoBody(), d.Admission.middleware(),
		traceCommands(d.TracerProvider)), Deps: d, gate: gate}
	tokenRoutes(r)
	streamTicketRoutes(r)
	for _, add := range routes {
		add(r)
	}
	rootRoutes(r) // after the others: it looks for the console's routes
	// The /v1 group's catch-all (echo registers it so the group's
	// middleware runs on unknown paths) would answer 404 where the path
	// exists under another method; answer 405 with Allow instead.
	r.V1.RouteNotFound(strings.TrimPrefix(v1CatchAll, "/v1"), v1NotFound(e))
	return e
}

// v1CatchAll is the route (c.Path()) of a /v1 request no route of its own
// matched: v1NotFound answers it.
const v1CatchAll = "/v1/*"

// probeMethods are the methods v1NotFound tries when listing Allow.
var probeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// v1NotFound answers a request the router matched only to the /v1
// catch-all: 405 with the Allow header when some other method has a route
// for the path, else 404.
func v1NotFound(e *echo.Echo) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		path := echo.GetPath(req)
		var allow []string
		for _, m := range probeMethods {
			if m == req.Method {
				continue
			}
			probe := e.NewContext(req, nil)
			e.Router().Find(m, path, probe)
			if p := probe.Path(); p != "" && p != c.Path() {
				allow = append(allow, m)
			}
		}
		if len(allow) == 0 {
			return echo.ErrNotFound
		}
		c.Response().Header().Set(echo.HeaderAllow, strings.Join(allow, ", "))
		return echo.ErrMethodNotAllowed
	}
}

// unescapeParams decodes percent-escapes in path parameters. echo routes
// on the escaped path when it has one (so "%2F" does not split a segment)
// and leaves the parameters escaped; ids with "/" in them (MIG instances
// "GPU-x/mig-1", slots "GPU-x/s0") must reach the handlers decoded. When
// the path has no escapes echo keeps, the parameters are already decoded
// and are left alone, so nothing is decoded twice.
func unescapeParams() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if c.Request().URL.RawPath == "" {
				return next(c)
			}
			values := append([]string(nil), c.ParamValues()...)
			for i, v := range values {
				if !strings.Contains(v, "%") {
					continue
				}
				u, err := url.PathUnescape(v)
				if err != nil {
					return core.Errorf(core.CodeInvalidArgument, "path has a malformed percent-escape")
				}
				values[i] = u
			}
			c.SetParamValues(values...)
			return next(c)
		}
	}
}

// requestID gives every request an id, echoed in X-Request-Id and logged
// with everything about the request. A caller-supplied id is kept so traces
// join up across services, unless it is long, has characters that do not
// belong in a header or a log line, or is shaped like a secret (every line
// of the request would carry it); then a fresh one is generated.
func requestID() echo.MiddlewareFunc {
	echoRequestID := middleware.RequestID()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		h := echoRequestID(next)
		return func(c echo.Context) error {
			req := c.Request()
			if id := req.Header.Get(echo.HeaderXRequestID); id != "" && !validRequestID(id) {
				req.Header.Del(echo.HeaderXRequestID)
			}
			return h(c)
		}
	}
}

func validRequestID(id string) bool {
	if len(id) > 128 || core.ContainsSecret(id) {
		return false
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == ':'
		if !ok {
			return false
		}
	}
	return true
}
