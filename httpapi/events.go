package httpapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/outbox"
)

// Defaults of EventAPI.
const (
	// DefaultHeartbeat is how long a stream writes nothing before it
	// sends a comment (each frame starts the wait again), so
	// proxies and load balancers do not close it as dead (WHATWG's advice
	// is about every 15 s).
	DefaultHeartbeat = 15 * time.Second
	// DefaultStreamWriteTimeout bounds one write to a stream client. A
	// stream is exempt from the server's write timeout (it is long-lived),
	// so without it a client that stops reading would pin its handler in
	// Write forever.
	DefaultStreamWriteTimeout = 30 * time.Second
	// DefaultStreamsPerToken and DefaultStreamsPerTenant cap the streams
	// open at once in one process, per token and per tenant: each holds a
	// connection, a goroutine and a broker slot.
	DefaultStreamsPerToken  = 8
	DefaultStreamsPerTenant = 64
	// DefaultStreamLifetime is how long the server keeps one stream open
	// before ending it cleanly; the client resumes with Last-Event-ID.
	// Bounding it re-checks the token at each reconnect and spreads
	// streams over processes again after a deploy or a scale-out.
	DefaultStreamLifetime = time.Hour
	// streamRetry is the reconnection delay suggested to EventSource.
	streamRetry = 3 * time.Second
	// streamCapRetry is the Retry-After of a stream refused by a cap.
	streamCapRetry = 5 * time.Second
	// streamSendBuffer caps the kernel's send buffer of a stream's TCP
	// connection (Linux doubles it). Left to itself the kernel grows it up
	// to net.ipv4.tcp_wmem's maximum (4 MiB by default), and a write only
	// blocks, so that the write timeout can drop a client that stopped
	// reading, once that much is queued: until then such a client is
	// never found out (a quiet stream's heartbeats take years to fill
	// 4 MiB), and every stream could pin megabytes of kernel memory.
	streamSendBuffer = 64 << 10
)

// StreamLimits bound the event streams of one process. Zero values take
// the defaults.
type StreamLimits struct {
	PerToken    int           // open streams per token
	PerTenant   int           // open streams per tenant (operators: their own tenant)
	MaxLifetime time.Duration // after which the server ends a stream
}

func (l StreamLimits) withDefaults() StreamLimits {
	if l.PerToken <= 0 {
		l.PerToken = DefaultStreamsPerToken
	}
	if l.PerTenant <= 0 {
		l.PerTenant = DefaultStreamsPerTenant
	}
	if l.MaxLifetime <= 0 {
		l.MaxLifetime = DefaultStreamLifetime
	}
	return l
}

// EventAPI serves the event log: GET /v1/events pages it, GET
// /v1/events/stream streams it as Server-Sent Events. Both are scoped to
// the caller: operators see every tenant, anyone else their own tenant.
type EventAPI struct {
	Broker *eventstream.Broker
	Reader *eventstream.Reader
	// Heartbeat is how long a stream writes nothing before its comment
	// heartbeat; zero means DefaultHeartbeat. Tests shorten it.
	Heartbeat time.Duration
	// WriteTimeout bounds each write to a stream; zero means
	// DefaultStreamWriteTimeout.
	WriteTimeout time.Duration
	// Limits cap the open streams and their lifetime.
	Limits StreamLimits
}

// EventRoutes registers GET /v1/events and GET /v1/events/stream, served
// by a. main runs the broker (Broker.Run) and closes it on shutdown. The
// stream counts and the revocation watch are per server (per call of the
// Routes).
func EventRoutes(a EventAPI) Routes { return a.routes }

func (a EventAPI) routes(r Router) {
	a.Limits = a.Limits.withDefaults()
	s := &eventStreams{EventAPI: a, slots: newStreamSlots(a.Limits), commands: r.Deps.Commands}
	s.revocations, _ = r.Deps.Auth.(RevocationWatcher)
	r.V1.GET("/events", a.list, queryParams("after", "types", "subject", "limit"))
	r.V1.GET("/events/stream", s.stream, queryParams("after", "types", "subject", "ticket"))
}

// eventStreams serves GET /v1/events/stream with its per-server state.
type eventStreams struct {
	EventAPI
	slots       *streamSlots
	revocations RevocationWatcher // nil: the authenticator cannot tell
	commands    *commands.Handlers
}

// Why a stream was ended by the server rather than by its client; both end
// it cleanly, as EventSource expects.
var (
	errTokenRevoked   = errors.New("event stream: the token was revoked or expired")
	errStreamLifetime = errors.New("event stream: maximum lifetime reached")
)

func (a EventAPI) list(c echo.Context) error {
	after, err := outbox.ParsePosition(c.QueryParam("after"))
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, eventstream.MaxLimit)
	if err != nil {
		return err
	}
	scope, err := eventScope(c)
	if err != nil {
		return err
	}
	page, err := a.Reader.Page(c.Request().Context(), scope, after, limit)
	if err != nil {
		return err
	}
	// Items are the public envelope exactly; positions travel only as
	// cursors.
	return c.JSON(http.StatusOK, mapPage(page.Events, page.Next.String(), func(e outbox.Stored) core.Event { return e.Event }))
}

// eventScope is the scope of the caller's read of the log, with the
// filters GET /v1/events and GET /v1/events/stream both take (?types=,
// ?subject=), so that a subject's history and its live stream show the same
// events: the caller's tenant's (every tenant's for operators), of those
// types, of that subject. Another tenant's subject is no error: it reads as
// a subject nothing was written about (Scope.WithSubject).
func eventScope(c echo.Context) (eventstream.Scope, error) {
	scope, err := eventstream.ScopeFor(ActorOf(c), typesParam(c))
	if err != nil {
		return eventstream.Scope{}, err
	}
	return scope.WithSubject(c.QueryParam("subject"))
}

// typesParam reads ?types=a,b (also repeated: ?types=a&types=b).
func typesParam(c echo.Context) []string {
	var types []string
	for _, v := range c.QueryParams()["types"] {
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				types = append(types, t)
			}
		}
	}
	return types
}

// streamStart is where a stream resumes: the Last-Event-ID header, which
// EventSource sends on every reconnect and which therefore wins over the
// ?after= of the original URL; else ?after= (present but empty means the
// start of the retained log); else nil, the live feed from now on. The
// header given twice is refused, as ?after= twice is (queryParams): read
// as its first value only, the resume point would depend on the order a
// proxy kept them in.
func streamStart(c echo.Context) (*outbox.Position, error) {
	if n := len(c.Request().Header.Values("Last-Event-ID")); n > 1 {
		return nil, core.Errorf(core.CodeInvalidArgument, "Last-Event-ID is given %d times; give it once", n)
	}
	raw, ok := strings.TrimSpace(c.Request().Header.Get("Last-Event-ID")), false
	if raw != "" {
		ok = true
	} else if vs, present := c.QueryParams()["after"]; present {
		raw, ok = vs[0], true
	}
	if !ok {
		return nil, nil
	}
	p, err := outbox.ParsePosition(raw)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// tokenEnded is why the stream of actor's token was ended by its watch:
// TENANT_SUSPENDED with the reason when its tenant is suspended (what a
// reconnect would get), else UNAUTHENTICATED, the token revoked or
// expired.
func (a *eventStreams) tokenEnded(ctx context.Context, actor core.Actor) error {
	if a.commands != nil {
		if s, err := a.commands.TenantSuspension(ctx, actor.Tenant); err == nil && s.Suspended {
			return core.TenantSuspendedError(actor.Tenant, s.Reason)
		}
	}
	return core.Errorf(core.CodeUnauthenticated, "the token was revoked or has expired")
}

// stream serves GET /v1/events/stream. Everything that can fail with a
// status (bad cursor, expired cursor, scope, too many streams, shutdown)
// fails before the first byte, as a normal JSON error. After that the
// stream ends without an error status: the client went away, or it fell
// behind (dropped), the server is shutting down or the stream reached its
// maximum lifetime, and then the client reconnects with Last-Event-ID.
// Two ends are errors the client must act on, which an `event: error`
// frame says before the stream ends: retention pruned the log past the
// stream while it caught up (CURSOR_EXPIRED), and its token was revoked
// or expired (UNAUTHENTICATED; a reconnect would get its 401) or its
// tenant suspended (TENANT_SUSPENDED with the reason; a reconnect would
// get its 403).
//
// ?types= and ?subject= filter it as they filter GET /v1/events
// (eventScope). A subject's stream catches up after its cursor from the
// index by subject (Reader.Page), so a Last-Event-ID far behind, with
// thousands of other events since, costs the subject's own events; its
// live part is the broker's one tail of the log, filtered in memory
// (Scope.Matches), so the write path pays for no index of its own.
func (a *eventStreams) stream(c echo.Context) error {
	actor := ActorOf(c)
	start, err := streamStart(c)
	if err != nil {
		return err
	}
	scope, err := eventScope(c)
	if err != nil {
		return err
	}
	release, err := a.slots.acquire(actor)
	if err != nil {
		return rateLimited(c, streamCapRetry, "%s", err.Error())
	}
	defer release()

	ctx, cancel := context.WithCancelCause(c.Request().Context())
	defer cancel(nil)
	if a.revocations != nil && actor.TokenID != "" {
		stop := a.revocations.WatchRevocation(actor.TokenID, func() { cancel(errTokenRevoked) })
		defer stop()
		if context.Cause(ctx) == errTokenRevoked {
			return a.tokenEnded(c.Request().Context(), actor)
		}
	}
	lifetime := time.AfterFunc(a.Limits.MaxLifetime, func() { cancel(errStreamLifetime) })
	defer lifetime.Stop()

	sub, err := a.Broker.Subscribe(ctx, scope, start)
	if err != nil {
		return err
	}
	defer sub.Close()

	w := newSSEWriter(c.Response(), cmp.Or(a.WriteTimeout, DefaultStreamWriteTimeout))
	// Exempt from the server's timeouts (ServerConfig): no read deadline
	// (net/http also clears it when it starts watching for the client to
	// go away; a read timing out would cancel the request), and a write
	// deadline per write (w.timeout) instead of the server's, which would
	// cut the stream off. No deadline is left behind for the next request
	// on this keep-alive connection.
	_ = w.rc.SetReadDeadline(time.Time{})
	defer func() { _ = w.rc.SetWriteDeadline(time.Time{}) }()
	boundSendBuffer(c.Request().Context())
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	c.Response().WriteHeader(http.StatusOK)
	// The first frame suggests the retry delay and sets the client's last
	// event id to the start, so it has a resume point before any event.
	if err := w.write(fmt.Sprintf("retry: %d\nid: %s\n\n", streamRetry.Milliseconds(), sub.Start())); err != nil {
		return nil // the client is gone
	}
	err = sub.Deliver(ctx, w.event, cmp.Or(a.Heartbeat, DefaultHeartbeat), w.heartbeat)
	switch context.Cause(ctx) {
	case errTokenRevoked:
		// Ended on purpose, and resuming cannot help: an error frame says
		// so, as the 401 of a reconnect would, so that a client stops
		// instead of reconnecting as after a network failure.
		_ = w.streamError(a.tokenEnded(c.Request().Context(), actor))
		return nil
	case errStreamLifetime:
		// Ended by the server on purpose, whatever Deliver was doing.
		return nil
	}
	switch {
	case core.CodeOf(err) == core.CodeCursorExpired:
		// Retention pruned the log past the stream while it caught up:
		// resuming cannot help, so the stream says so in an error frame
		// before it ends (a reconnect with Last-Event-ID gets its 410).
		_ = w.streamError(err)
		return nil
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, eventstream.ErrDropped),
		errors.Is(err, eventstream.ErrBrokerClosed), errors.Is(err, errClientGone):
		// Ending the response is the whole signal: EventSource reconnects
		// with Last-Event-ID and continues.
		return nil
	}
	return fmt.Errorf("event stream after %s: %w", sub.Start(), err)
}

// boundSendBuffer caps the send buffer of the connection the stream is
// written to (streamSendBuffer), so that a client that stops reading blocks
// the stream's writes soon and the write timeout ends it. Without a TCP
// connection (a server not built by NewServer, a Unix socket) it does
// nothing. The cap stays with the connection if it serves more requests
// after the stream: ample for API answers.
func boundSendBuffer(ctx context.Context) {
	if c, ok := connOf(ctx).(interface{ SetWriteBuffer(bytes int) error }); ok {
		_ = c.SetWriteBuffer(streamSendBuffer)
	}
}
