package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/workqueue"
)

// writeGate holds the first response write that contains match until the
// test opens it: the stream's handler is then stopped in the middle of its
// catch-up, at a point the test knows.
type writeGate struct {
	match   string
	reached chan struct{} // closed when the write is held
	open    chan struct{} // closed by the test to let it through
	once    sync.Once
}

func newWriteGate(match string) *writeGate {
	return &writeGate{match: match, reached: make(chan struct{}), open: make(chan struct{})}
}

func (g *writeGate) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Writer = &gatedWriter{ResponseWriter: c.Response().Writer, gate: g}
		return next(c)
	}
}

type gatedWriter struct {
	http.ResponseWriter
	gate *writeGate
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.gate.match) {
		w.gate.once.Do(func() {
			close(w.gate.reached)
			<-w.gate.open
		})
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (flush, write
// deadlines) through the gate.
func (w *gatedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// setupRetentionEvents is setupEvents with a broker that catches streams
// up one event per read, a gate on the response writes of /v1, and the
// pruner run as the work-queue reconciler it is in production.
func setupRetentionEvents(t *testing.T, gate *writeGate) (*eventServer, func()) {
	t.Helper()
	es := &eventServer{}
	routes := func(r httpapi.Router) {
		r.V1.Use(gate.middleware)
		es.broker = eventstream.NewBroker(r.Deps.Pool, eventstream.BrokerOptions{CatchUpPage: 1})
		httpapi.EventRoutes(httpapi.EventAPI{Broker: es.broker, Reader: eventstream.NewReader(r.Deps.Pool)})(r)
	}
	es.testServer = setup(t, routes)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); es.broker.Run(ctx, 5*time.Millisecond, nil) }()
	t.Cleanup(func() { cancel(); <-ran })

	pruner := &commands.Pruner{Pool: es.pg.Pool, Retention: commands.Retention{Events: 30 * 24 * time.Hour}}
	w := workqueue.NewWorker(es.pg.Pool, "retention-test", es.clock, nil)
	w.Handle(commands.KindRetentionPrune, pruner.HandleRetentionPrune)
	prune := func() {
		t.Helper()
		require.NoError(t, pruner.EnsureRetentionPrune(context.Background()))
		n, err := w.RunOnce(context.Background())
		require.NoError(t, err)
		require.Equal(t, 1, n, "the pruner ran")
	}
	return es, prune
}

// cursorsOf returns the cursor of each event the operator lists with
// types, in order (the cursor of an event is nextCursor of a one-event
// page ending at it).
func (s *eventServer) cursorsOf(t *testing.T, types string) ([]uuid.UUID, []string) {
	t.Helper()
	var ids []uuid.UUID
	var cursors []string
	after := ""
	for {
		p := s.list(t, s.operator, "limit=1&types="+types+"&after="+after)
		if len(p.Items) == 0 {
			return ids, cursors
		}
		ids, cursors = append(ids, p.Items[0].ID), append(cursors, p.NextCursor)
		after = p.NextCursor
	}
}

// waitTyped waits until the operator's listing of types holds id.
func (s *eventServer) waitTyped(t *testing.T, types string, id uuid.UUID) {
	t.Helper()
	require.Eventually(t, func() bool {
		r := s.call(t, http.MethodGet, "/v1/events?limit=500&types="+types, s.operator, nil)
		var p eventsPage
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r.decode(t, &p)
		return slices.Contains(eventIDs(p.Items), id)
	}, eventsWait, 5*time.Millisecond)
}

func requireCursorExpired(t *testing.T, status int, body []byte, what string) {
	t.Helper()
	require.Equal(t, http.StatusGone, status, "%s: %s", what, body)
	var e httpapi.ErrorBody
	require.NoError(t, json.Unmarshal(body, &e), what)
	require.Equal(t, core.CodeCursorExpired, e.Error.Code, what)
	require.NotEmpty(t, e.Error.Message, what)
}

// The test: events older than COMPUTE_EVENT_RETENTION are pruned
// by the reconciler; a cursor older than the oldest retained event is 410
// CURSOR_EXPIRED on GET /v1/events and on the stream (before it starts,
// and as an `event: error` frame when pruning overtakes a stream that is
// catching up); newer cursors keep working.
func TestRetentionCursorExpired(t *testing.T) {
	t.Parallel()
	gate := newWriteGate("event: instance.stopping")
	s, prune := setupRetentionEvents(t, gate)
	const types = "instance.provisioning,instance.running,instance.stopping,instance.stopped"
	for range 3 {
		s.appendEvent(t, "tenant-a", "instance.provisioning")
	}
	s.pg.AdvanceSimClock(t, 31*24*time.Hour)
	young := []uuid.UUID{s.appendEvent(t, "tenant-a", "instance.running"), s.appendEvent(t, "tenant-a", "instance.running")}
	s.waitTyped(t, types, young[1])
	_, cursors := s.cursorsOf(t, types)
	require.Len(t, cursors, 5)

	prune()
	ids, _ := s.cursorsOf(t, types)
	require.Equal(t, young, ids, "the old events were pruned, the young ones kept")

	for i, c := range cursors[:3] {
		r := s.call(t, http.MethodGet, "/v1/events?after="+c, s.operator, nil)
		requireCursorExpired(t, r.status, r.body, fmt.Sprintf("list after pruned event %d", i))
		for _, q := range []struct{ query, lastEventID string }{{"", c}, {"after=" + c, ""}} {
			sse := s.openStream(t, s.operator, q.query, q.lastEventID)
			body, err := io.ReadAll(sse.res.Body)
			require.NoError(t, err)
			requireCursorExpired(t, sse.res.StatusCode, body, fmt.Sprintf("stream after pruned event %d (%+v)", i, q))
		}
	}
	r := s.list(t, s.operator, "types="+types+"&after="+cursors[3])
	require.Equal(t, young[1:], eventIDs(r.Items), "a cursor at a retained event still works")
	live := s.openStream(t, s.operator, "types=instance.running", cursors[3])
	require.Equal(t, http.StatusOK, live.res.StatusCode)
	got, _ := live.events(t, 1)
	require.Equal(t, young[1:], got)

	// Pruning overtakes a stream that is catching up: it has sent the
	// first event after its cursor when everything up to the newest event
	// is pruned. The stream says CURSOR_EXPIRED in an error frame and
	// ends.
	var caughtUp uuid.UUID
	for range 3 {
		caughtUp = s.appendEvent(t, "tenant-a", "instance.stopping")
	}
	s.waitTyped(t, types, caughtUp)
	_, err := s.broker.Poll(context.Background()) // the broker's head is past them: the stream catches up from the log
	require.NoError(t, err)
	behind := s.openStream(t, s.operator, "types="+types, cursors[4])
	require.Equal(t, http.StatusOK, behind.res.StatusCode)
	select {
	case <-gate.reached: // the first caught-up event is being written
	case <-time.After(eventsWait):
		t.Fatal("the stream did not start catching up")
	}
	s.pg.AdvanceSimClock(t, 31*24*time.Hour)
	newest := s.appendEvent(t, "tenant-a", "instance.stopped")
	s.waitTyped(t, types, newest)
	prune()
	ids, _ = s.cursorsOf(t, types)
	require.Equal(t, []uuid.UUID{newest}, ids)
	close(gate.open)

	first := behind.next(t)
	require.Equal(t, "instance.stopping", first.event)
	end := behind.next(t)
	require.Equal(t, "error", end.event)
	require.False(t, end.hasID, "the error frame leaves the last event id where it was")
	var e httpapi.ErrorBody
	require.NoError(t, json.Unmarshal([]byte(end.data), &e))
	require.Equal(t, core.CodeCursorExpired, e.Error.Code)
	for f := range behind.frames {
		require.Empty(t, f.data, "nothing after the error frame")
	}
	// EventSource reconnects with the last event id it got: 410.
	again := s.openStream(t, s.operator, "", first.id)
	require.Equal(t, http.StatusGone, again.res.StatusCode)
}

// A cursor this installation never gave out (ahead of its log: another
// installation's, or one kept from before a restore) is 410 CURSOR_EXPIRED
// on GET /v1/events and on the stream, as an expired one is: resuming from
// it would silently skip the events the log numbers below it.
func TestCursorAheadOfTheLogIsGone(t *testing.T) {
	t.Parallel()
	s, _ := setupRetentionEvents(t, newWriteGate("never written"))
	id := s.appendEvent(t, "tenant-a", "instance.succeeded")
	s.waitTyped(t, "instance.succeeded", id)
	const ahead = "7fffffffffffffff0000000000000001"
	r := s.call(t, http.MethodGet, "/v1/events?after="+ahead, s.operator, nil)
	requireCursorExpired(t, r.status, r.body, "list")
	for _, q := range []struct{ query, lastEventID string }{{"", ahead}, {"after=" + ahead, ""}} {
		sse := s.openStream(t, s.operator, q.query, q.lastEventID)
		body, err := io.ReadAll(sse.res.Body)
		require.NoError(t, err)
		requireCursorExpired(t, sse.res.StatusCode, body, fmt.Sprintf("stream %+v", q))
	}
}

// A tenant's stream that is caught up keeps a resume point that survives
// retention while only other tenants' events flow: its idle heartbeats
// carry the id of how far the log was read for it, so a reconnect after
// the tenant's own last event was pruned resumes instead of getting 410
// CURSOR_EXPIRED for events it never missed.
func TestIdleTenantStreamResumesAfterItsLastEventWasPruned(t *testing.T) {
	t.Parallel()
	s := setupEvents(t, 5*time.Millisecond)
	_, a := s.tokenFor(t, "tenant-a", "viewer@a", core.RoleViewer)
	pruner := &commands.Pruner{Pool: s.pg.Pool, Retention: commands.Retention{Events: 30 * 24 * time.Hour}}

	a1 := s.appendEvent(t, "tenant-a", "instance.running")
	s.waitTyped(t, "instance.running", a1)
	sse := s.openStream(t, a, "after=", "")
	require.Equal(t, http.StatusOK, sse.res.StatusCode)
	got, cursors := sse.events(t, 1)
	require.Equal(t, []uuid.UUID{a1}, got)

	// A month later, while the stream stays open, only tenant B's events
	// follow; A's stream sends none of them, but its resume point (the
	// last id it got, as EventSource keeps it) moves past them.
	s.pg.AdvanceSimClock(t, 31*24*time.Hour)
	var b uuid.UUID
	for range 2 {
		b = s.appendEvent(t, "tenant-b", "instance.stopped")
	}
	s.waitTyped(t, "instance.stopped", b)
	_, bCursors := s.cursorsOf(t, "instance.stopped")
	lastID := cursors[0]
	deadline := time.After(eventsWait)
wait:
	for lastID < bCursors[len(bCursors)-1] {
		select {
		case f, ok := <-sse.frames:
			require.True(t, ok, "the stream ended")
			require.Empty(t, f.data, "tenant A's stream got an event that is not A's")
			if f.hasID {
				lastID = f.id
			}
		case <-deadline:
			break wait // the id stayed behind the log; the reconnect below says what that costs
		}
	}

	// Retention prunes a1; the stream then ends (its lifetime, a deploy)
	// and the client reconnects with its last event id.
	res, err := pruner.Prune(context.Background(), nil)
	require.NoError(t, err)
	require.Positive(t, res.Events)
	sse.close()
	again := s.openStream(t, a, "after=", lastID)
	if again.res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(again.res.Body)
		t.Fatalf("tenant A missed nothing, yet resuming after %s is %d: %s", lastID, again.res.StatusCode, body)
	}
	a2 := s.appendEvent(t, "tenant-a", "instance.running")
	got, _ = again.events(t, 1)
	require.Equal(t, []uuid.UUID{a2}, got)
}
