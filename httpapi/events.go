package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/events"
	"github.com/bettercompute/compute/outbox"
)

// Defaults of EventAPI.
const (
	// DefaultHeartbeat is how often an idle stream sends a comment, so
	// proxies and load balancers do not close it as dead (WHATWG's advice
	// is about every 15 s).
	DefaultHeartbeat = 15 * time.Second
	// DefaultStreamWriteTimeout bounds one write to a stream client. The
	// server has no write timeout (streams are long-lived), so without it a
	// client that stops reading would pin its handler in Write forever.
	DefaultStreamWriteTimeout = 30 * time.Second
	// streamRetry is the reconnection delay suggested to EventSource.
	streamRetry = 3 * time.Second
)

// EventAPI serves the event log: GET /v1/events pages it, GET
// /v1/events/stream streams it as Server-Sent Events. Both are scoped to
// the caller: operators see every tenant, anyone else their own tenant.
type EventAPI struct {
	Broker *events.Broker
	Reader *events.Reader
	// Heartbeat is the interval of the stream's comment heartbeat; zero
	// means DefaultHeartbeat. Tests shorten it.
	Heartbeat time.Duration
	// WriteTimeout bounds each write to a stream; zero means
	// DefaultStreamWriteTimeout.
	WriteTimeout time.Duration
}

// EventRoutes registers the event endpoints with the defaults. main runs
// the broker (Broker.Run) and closes it on shutdown.
func EventRoutes(b *events.Broker, r *events.Reader) Routes {
	return EventAPI{Broker: b, Reader: r}.Routes
}

// Routes registers GET /v1/events and GET /v1/events/stream.
func (a EventAPI) Routes(r Router) {
	r.V1.GET("/events", a.list)
	r.V1.GET("/events/stream", a.stream)
}

// eventPage is the body of GET /v1/events. Items are the public envelope
// exactly; positions travel only as cursors.
type eventPage struct {
	Items      []core.Event `json:"items"`
	NextCursor string       `json:"nextCursor"`
}

func (a EventAPI) list(c echo.Context) error {
	after, err := outbox.ParsePosition(c.QueryParam("after"))
	if err != nil {
		return err
	}
	limit := 0
	if raw := c.QueryParam("limit"); raw != "" {
		if limit, err = strconv.Atoi(raw); err != nil || limit < 1 {
			return core.Errorf(core.CodeInvalidArgument, "limit must be a number between 1 and %d, got %q", events.MaxLimit, raw)
		}
	}
	scope, err := events.ScopeFor(ActorOf(c), typesParam(c))
	if err != nil {
		return err
	}
	page, err := a.Reader.Page(c.Request().Context(), scope, after, limit)
	if err != nil {
		return err
	}
	body := eventPage{Items: make([]core.Event, len(page.Events)), NextCursor: page.Next.String()}
	for i, e := range page.Events {
		body.Items[i] = e.Event
	}
	return c.JSON(http.StatusOK, body)
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
// start of the retained log); else nil, the live feed from now on.
func streamStart(c echo.Context) (*outbox.Position, error) {
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

// stream serves GET /v1/events/stream. Everything that can fail with a
// status (bad cursor, expired cursor, scope, shutdown) fails before the
// first byte, as a normal JSON error. After that the stream ends without an
// error status: the client went away, fell behind (dropped), or the server
// is shutting down; in the last two cases it reconnects with Last-Event-ID.
func (a EventAPI) stream(c echo.Context) error {
	ctx := c.Request().Context()
	start, err := streamStart(c)
	if err != nil {
		return err
	}
	scope, err := events.ScopeFor(ActorOf(c), typesParam(c))
	if err != nil {
		return err
	}
	sub, err := a.Broker.Subscribe(ctx, scope, start)
	if err != nil {
		return err
	}
	defer sub.Close()

	w := newSSEWriter(c.Response(), cmp.Or(a.WriteTimeout, DefaultStreamWriteTimeout))
	// The server sets no deadlines of its own, so a deadline left behind
	// would break the next request on this keep-alive connection.
	defer func() { _ = w.rc.SetWriteDeadline(time.Time{}) }()
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
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, events.ErrDropped),
		errors.Is(err, events.ErrBrokerClosed), errors.Is(err, errClientGone),
		core.CodeOf(err) == core.CodeCursorExpired:
		// Ending the response is the whole signal: EventSource reconnects
		// with Last-Event-ID (an expired cursor then gets its 410).
		return nil
	}
	return fmt.Errorf("event stream after %s: %w", sub.Start(), err)
}

// errClientGone wraps a failed write: the connection is broken or the
// client stopped reading for longer than the write timeout.
var errClientGone = errors.New("event stream client gone")

// sseWriter writes Server-Sent Events frames and flushes each one, each
// write bounded by a deadline.
type sseWriter struct {
	res     *echo.Response
	rc      *http.ResponseController
	timeout time.Duration
}

func newSSEWriter(res *echo.Response, timeout time.Duration) *sseWriter {
	return &sseWriter{res: res, rc: http.NewResponseController(res), timeout: timeout}
}

// event writes one event: the cursor as id, the type as event name, the
// envelope as data (json.Marshal escapes newlines, so it is one line).
func (w *sseWriter) event(e outbox.Stored) error {
	data, err := json.Marshal(e.Event)
	if err != nil {
		return fmt.Errorf("encode event %s: %w", e.ID, err)
	}
	return w.write(fmt.Sprintf("id: %s\nevent: %s\ndata: %s\n\n", e.Position, sseField(e.Type), data))
}

// heartbeat writes a comment line, which EventSource ignores.
func (w *sseWriter) heartbeat() error { return w.write(": heartbeat\n\n") }

func (w *sseWriter) write(frame string) error {
	// ErrNotSupported (a writer without deadlines) just means no bound.
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	if _, err := w.res.Write([]byte(frame)); err != nil {
		return fmt.Errorf("%w: %v", errClientGone, err)
	}
	if err := w.rc.Flush(); err != nil {
		return fmt.Errorf("%w: %v", errClientGone, err)
	}
	return nil
}

// sseField keeps a value on one line: a CR or LF would end the field and
// let the rest be read as another field.
func sseField(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
