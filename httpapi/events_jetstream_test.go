package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/natsink"
	"github.com/bettercompute/compute/outbox"
)

// jetStreamEvents is one database with the JetStream sink forwarding its
// outbox to a nats-server the test started, and API servers over that
// database: the eventServer's, whose broker tails the outbox
// (COMPUTE_STREAM_SOURCE=postgres), and any number started with
// natsAPI, whose brokers read the stream (nats), as separate API processes
// would.
type jetStreamEvents struct {
	*eventServer
	nats *testenv.NATS
}

func setupJetStreamEvents(t *testing.T) *jetStreamEvents {
	t.Helper()
	es := setupEvents(t, 0)
	srv := testenv.StartNATS(t)
	startJetStreamSink(t, es, srv.URL)
	return &jetStreamEvents{eventServer: es, nats: srv}
}

// startJetStreamSink runs the dispatcher role's sink over the database
// until the test ends, as `compute serve` does (cmd/compute/jetstream.go).
func startJetStreamSink(t *testing.T, es *eventServer, url string) {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	sink, err := natsink.Connect(natsink.Config{
		URL: url, Name: "sink", ReconnectWait: 20 * time.Millisecond, PublishTimeout: time.Second,
		RetryInitial: 5 * time.Millisecond, RetryMax: 100 * time.Millisecond,
	}, logger, nil)
	require.NoError(t, err)
	router, err := outbox.NewRouter(logger, prometheus.NewRegistry())
	require.NoError(t, err)
	sub := outbox.NewSubscriber(natsink.SinkID, logger)
	sub.NackDelay = 10 * time.Millisecond
	sink.Route(router, sub, es.pg.Pool)
	ctx, cancel := context.WithCancel(context.Background())
	routerDone, dispDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(routerDone); _ = router.Run(ctx) }()
	<-router.Running()
	disp := outbox.NewDispatcher(es.pg.Pool, "sink", sub, logger)
	disp.RenewEvery = time.Hour // the simulated clock does not move here
	go func() { defer close(dispDone); disp.Run(ctx, 5*time.Millisecond, nil) }()
	t.Cleanup(func() {
		cancel()
		<-dispDone
		<-routerDone
		_ = sink.Close()
	})
}

// natsAPI is one API process serving event streams from JetStream.
type natsAPI struct {
	*eventServer
	src  *natsink.Source
	stop func() // ends its streams (ErrBrokerClosed) and closes it, as a process that shuts down
}

// natsAPI starts an API server over the same database whose broker reads
// the JetStream stream, keeping the newest recent events in memory.
func (s *jetStreamEvents) natsAPI(t *testing.T, recent int, heartbeat time.Duration) *natsAPI {
	t.Helper()
	return s.natsAPIWith(t, recent, heartbeat, eventstream.BrokerOptions{})
}

// natsAPIWith is natsAPI with the broker's options (its CatchUpPage is 3
// whatever opts says).
func (s *jetStreamEvents) natsAPIWith(t *testing.T, recent int, heartbeat time.Duration, opts eventstream.BrokerOptions) *natsAPI {
	t.Helper()
	src, err := natsink.OpenSource(natsink.SourceConfig{
		URL: s.nats.URL, Name: "api", ReconnectWait: 20 * time.Millisecond, RequestTimeout: 2 * time.Second,
		LongPoll: 200 * time.Millisecond, Recent: recent,
	}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	opts.CatchUpPage = 3
	broker := eventstream.NewSourceBroker(src, opts)
	d := httpapi.Deps{
		Pool: s.pg.Pool, Commands: commands.New(s.pg.Pool, commands.Config{}), Clock: s.clock,
		Auth: authn.New(s.pg.Pool, 0), Logger: slog.New(slog.DiscardHandler), BodyLimit: testBodyLimit,
		Registry: prometheus.NewRegistry(),
	}
	e := httpapi.New(d, httpapi.EventRoutes(httpapi.EventAPI{
		Broker: broker, Reader: eventstream.NewReader(s.pg.Pool), Heartbeat: heartbeat,
	}))
	srv := httptest.NewServer(e)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); src.Run(ctx, broker) }()
	ts := *s.testServer
	ts.url, ts.echo = srv.URL, e
	a := &natsAPI{eventServer: &eventServer{testServer: &ts, broker: broker}, src: src}
	stopped := false
	a.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-ran
			srv.Close()
			src.Close()
		}
	}
	t.Cleanup(a.stop)
	return a
}

// waitForwarded waits until the stream holds every event of the outbox.
func (s *jetStreamEvents) waitForwarded(t *testing.T) {
	t.Helper()
	nc, err := nats.Connect(s.nats.URL)
	require.NoError(t, err)
	defer nc.Close()
	js, err := nc.JetStream()
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		// Every committed event, not only those the frontier lets a reader
		// see yet: the frontier is cluster-wide, and another test's open
		// transaction may hold the later ones back for a moment.
		var committed int
		if err := s.pg.Pool.QueryRow(context.Background(), "SELECT count(*) FROM outbox").Scan(&committed); err != nil {
			return false
		}
		log, err := outbox.ReadAfter(context.Background(), s.pg.Q, outbox.Position{}, 10_000)
		if err != nil || len(log) == 0 || len(log) != committed {
			return false
		}
		info, err := js.StreamInfo(natsink.DefaultStream)
		return err == nil && info.State.Msgs == uint64(len(log))
	}, eventsWait, 5*time.Millisecond, "the sink forwards every event")
}

// eventFrames reads n event frames, failing the test after eventsWait in
// all (next's wait starts again at each heartbeat).
func (c *sseClient) eventFrames(t *testing.T, n int) []sseFrame {
	t.Helper()
	deadline := time.After(eventsWait)
	out := make([]sseFrame, 0, n)
	for len(out) < n {
		select {
		case f, ok := <-c.frames:
			require.True(t, ok, "the stream ended after %d of %d events", len(out), n)
			if f.data != "" {
				out = append(out, f)
			}
		case <-deadline:
			t.Fatalf("%d of %d events within the wait", len(out), n)
		}
	}
	return out
}

// tenantOf is the tenantId of an event frame ("" for a fleet event).
func tenantOf(t *testing.T, f sseFrame) string {
	t.Helper()
	var e core.Event
	require.NoError(t, json.Unmarshal([]byte(f.data), &e))
	return e.TenantID
}

func frameIDs(t *testing.T, frames []sseFrame) []uuid.UUID {
	t.Helper()
	out := make([]uuid.UUID, len(frames))
	for i, f := range frames {
		var e core.Event
		require.NoError(t, json.Unmarshal([]byte(f.data), &e))
		out[i] = e.ID
	}
	return out
}

// The test: events committed through outbox.Append reach an SSE
// client of an API process serving from JetStream with the same ids, event
// names and data, byte for byte, as a client of one serving from
// PostgreSQL, from the start of the log, after a cursor and live; and an
// idle stream from JetStream gets its heartbeats.
func TestEventStreamFromJetStreamIsTheOneFromPostgres(t *testing.T) {
	t.Parallel()
	s := setupJetStreamEvents(t)
	_, a := s.tokenFor(t, "tenant-a", "viewer@a", core.RoleViewer)
	for i := range 9 {
		s.appendEvent(t, []string{"tenant-a", "tenant-b", ""}[i%3], []string{"instance.running", "instance.stopping"}[i%2])
	}
	s.waitForwarded(t)
	js := s.natsAPI(t, 2, 50*time.Millisecond) // its memory: the newest two events

	type want struct {
		token, query string
		n            int
	}
	var third string // the cursor of the operator's third event
	for _, w := range []want{
		{s.operator, "after=", 9}, {s.operator, "after=&types=instance.stopping", 4}, {a, "after=", 3}, {a, "after=&types=instance.running,instance.stopping", 3},
	} {
		pgc, jsc := s.openStream(t, w.token, w.query, ""), js.openStream(t, w.token, w.query, "")
		require.Equal(t, http.StatusOK, jsc.res.StatusCode)
		require.Equal(t, pgc.first(t), jsc.first(t), "%s: the opening frame (retry, start id)", w.query)
		fromPG, fromJS := pgc.eventFrames(t, w.n), jsc.eventFrames(t, w.n)
		require.Equal(t, fromPG, fromJS, "%s: the same frames", w.query)
		if w.token == s.operator && w.query == "after=" {
			third = fromPG[2].id
		}
	}
	// Resumed after a cursor (Last-Event-ID), then live.
	pgc, jsc := s.openStream(t, s.operator, "", third), js.openStream(t, s.operator, "", third)
	require.Equal(t, pgc.first(t), jsc.first(t))
	require.Equal(t, pgc.eventFrames(t, 6), jsc.eventFrames(t, 6))
	pgLive, jsLive := s.openStream(t, a, "", ""), js.openStream(t, a, "", "")
	pgLive.first(t)
	jsLive.first(t)
	for i := range 4 {
		s.appendEvent(t, []string{"tenant-a", "tenant-b"}[i%2], "x.live")
	}
	live := pgc.eventFrames(t, 4)
	require.Equal(t, live, jsc.eventFrames(t, 4), "live events")
	require.Equal(t, pgLive.eventFrames(t, 2), jsLive.eventFrames(t, 2), "a tenant's live events")
	for _, f := range live {
		require.Equal(t, "x.live", f.event)
	}

	// Nothing more is sent; the idle stream from JetStream has heartbeats.
	deadline := time.After(eventsWait)
	for {
		select {
		case f := <-jsLive.frames:
			require.Empty(t, f.data, "no event beyond the tenant's own")
			if len(f.comments) > 0 {
				require.Equal(t, []string{"heartbeat"}, f.comments)
				return
			}
		case <-deadline:
			t.Fatal("no heartbeat on the idle stream from JetStream")
		}
	}
}

// Tenant scoping: through JetStream a tenant sees exactly what it sees
// through PostgreSQL, its own events and no fleet-wide ones, catching up
// and live, whatever its type filter; an operator sees everything.
func TestEventStreamFromJetStreamTenantScoping(t *testing.T) {
	t.Parallel()
	s := setupJetStreamEvents(t)
	_, a := s.tokenFor(t, "tenant-a", "viewer@a", core.RoleViewer)
	_, ab := s.tokenFor(t, "tenant-a-b", "viewer@ab", core.RoleViewer) // a tenant whose id extends tenant-a's
	tenants := []string{"tenant-a", "tenant-a-b", "", "tenant-b"}
	for i := range 12 {
		s.appendEvent(t, tenants[i%4], []string{"instance.running", "instance.stopping", "instance.failed"}[i%3])
	}
	s.waitForwarded(t)
	js := s.natsAPI(t, 1, 0)
	for _, c := range []struct {
		token, tenant string
		n             int
	}{{a, "tenant-a", 3}, {ab, "tenant-a-b", 3}, {s.operator, "*", 12}} {
		for _, q := range []struct {
			query string
			n     int
		}{{"after=", c.n}, {"after=&types=instance.running", c.n / 3}, {"after=&types=instance.running,instance.failed", 2 * c.n / 3}} {
			pgc, jsc := s.openStream(t, c.token, q.query, ""), js.openStream(t, c.token, q.query, "")
			fromPG, fromJS := pgc.eventFrames(t, q.n), jsc.eventFrames(t, q.n)
			require.Equal(t, fromPG, fromJS, "%s %s", c.tenant, q.query)
			for _, f := range fromJS {
				if c.tenant != "*" {
					require.Equal(t, c.tenant, tenantOf(t, f), "%s %s sees only its own events", c.tenant, q.query)
				}
			}
		}
	}

	// Live: each client of the JetStream process gets its own tenant's
	// events only, the operator every one, fleet events included.
	clients := map[string]*sseClient{}
	for name, token := range map[string]string{"tenant-a": a, "tenant-a-b": ab, "*": s.operator} {
		clients[name] = js.openStream(t, token, "", "")
		clients[name].first(t)
	}
	var ids []uuid.UUID
	for i := range 8 {
		ids = append(ids, s.appendEvent(t, tenants[i%4], "x.live"))
	}
	all := clients["*"].eventFrames(t, 8)
	require.Equal(t, ids, frameIDs(t, all))
	require.Empty(t, tenantOf(t, all[2]), "the operator sees fleet events")
	for _, tenant := range []string{"tenant-a", "tenant-a-b"} {
		got := clients[tenant].eventFrames(t, 2)
		for _, f := range got {
			require.Equal(t, tenant, tenantOf(t, f))
		}
	}
	// The tenant streams got nothing else: a marker event of each tenant
	// is the next frame each reads.
	markA, markAB := s.appendEvent(t, "tenant-a", "x.mark"), s.appendEvent(t, "tenant-a-b", "x.mark")
	require.Equal(t, []uuid.UUID{markA}, frameIDs(t, clients["tenant-a"].eventFrames(t, 1)))
	require.Equal(t, []uuid.UUID{markAB}, frameIDs(t, clients["tenant-a-b"].eventFrames(t, 1)))
}

// resumer is a client that reads one tenant's stream across reconnects,
// as EventSource does: each time with the last id it received as
// Last-Event-ID, to whichever API process it is sent.
type resumer struct {
	token  string
	last   string
	frames []sseFrame
	c      *sseClient
}

func (r *resumer) connect(t *testing.T, s *eventServer) {
	t.Helper()
	if r.c != nil {
		r.c.close()
	}
	query := ""
	if r.last == "" {
		query = "after="
	}
	r.c = s.openStream(t, r.token, query, r.last)
	require.Equal(t, http.StatusOK, r.c.res.StatusCode)
	f := r.c.first(t)
	if r.last != "" {
		require.Equal(t, r.last, f.id, "the stream starts at Last-Event-ID")
	}
}

func (r *resumer) read(t *testing.T, n int) {
	t.Helper()
	for _, f := range r.c.eventFrames(t, n) {
		r.frames = append(r.frames, f)
		r.last = f.id
	}
}

// The fault: a client that reconnects to another API process
// resumes from Last-Event-ID without a gap or a repeat, whichever source
// each process uses, through a process that shuts down (its streams end)
// and a new one that starts with nothing in memory.
func TestEventStreamResumesAcrossSourcesAndRestarts(t *testing.T) {
	t.Parallel()
	s := setupJetStreamEvents(t)
	_, a := s.tokenFor(t, "tenant-a", "viewer@a", core.RoleViewer)
	var want []uuid.UUID
	appendSome := func(n int) {
		for i := range n {
			want = append(want, s.appendEvent(t, "tenant-a", "instance.running"))
			s.appendEvent(t, "tenant-b", "instance.running") // not for the client
			if i%2 == 0 {
				s.appendEvent(t, "", "x.fleet")
			}
		}
	}
	appendSome(5)
	s.waitForwarded(t)
	js1 := s.natsAPI(t, 2, 0)
	r := &resumer{token: a}

	r.connect(t, s.eventServer) // PostgreSQL
	r.read(t, 3)
	appendSome(4)
	s.waitForwarded(t)
	r.connect(t, js1.eventServer) // to JetStream, with PostgreSQL's id
	r.read(t, 6)

	// js1 shuts down while the client is connected: its stream ends.
	js1.stop()
	for ended := false; !ended; {
		select {
		case f, ok := <-r.c.frames:
			require.Empty(t, f.data, "nothing after the shutdown")
			ended = !ok
		case <-time.After(eventsWait):
			t.Fatal("the stream did not end with its process")
		}
	}
	appendSome(3)
	s.waitForwarded(t)
	js2 := s.natsAPI(t, 1, 0) // a new process: the cursor is older than its memory
	r.connect(t, js2.eventServer)
	r.read(t, 3)
	appendSome(2) // live through JetStream
	r.read(t, 2)

	r.connect(t, s.eventServer) // back to PostgreSQL with JetStream's id
	appendSome(2)
	r.read(t, 2)
	require.Equal(t, want, frameIDs(t, r.frames), "every event of the tenant once, in order")
	js3 := s.natsAPI(t, 100, 0)
	r.connect(t, js3.eventServer) // and to JetStream again, caught up: nothing to repeat
	appendSome(1)
	r.read(t, 1)
	require.Equal(t, want, frameIDs(t, r.frames), "every event of the tenant once, in order")
}

// NATS is SIGKILLed and restarted on its store while clients are
// connected to a process serving from JetStream: the streams stay open
// (heartbeats go on), wait, and go on when NATS is back, each client
// seeing every event once, in order; a client that connects meanwhile
// with a recent Last-Event-ID is served from the process's memory, one
// that needs older history is refused with 503.
func TestEventStreamFromJetStreamThroughNATSKill(t *testing.T) {
	t.Parallel()
	s := setupJetStreamEvents(t)
	var want []uuid.UUID
	appendSome := func(n int) {
		for i := range n {
			want = append(want, s.appendEvent(t, []string{"tenant-a", ""}[i%2], "instance.running"))
		}
	}
	appendSome(4)
	s.waitForwarded(t)
	js := s.natsAPI(t, 100, 0)
	r := &resumer{token: s.operator}
	r.connect(t, js.eventServer)
	r.read(t, 4)
	early := r.frames[1].id

	s.nats.Kill()
	require.Eventually(t, func() bool { return js.src.Health() != nil }, eventsWait, 5*time.Millisecond,
		"the source sees NATS gone")
	appendSome(3) // committed while NATS is down: the sink waits
	late := &resumer{token: s.operator, last: early}
	late.connect(t, js.eventServer) // resumes from memory while NATS is down
	late.read(t, 2)
	// One that needs history from the stream is refused, to retry.
	refused := js.openStream(t, s.operator, "after=", "")
	body, err := io.ReadAll(refused.res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, refused.res.StatusCode, "%s", body)
	require.NotEmpty(t, refused.res.Header.Get("Retry-After"))

	s.nats.Start()
	appendSome(3)
	r.read(t, 6)
	late.read(t, 6)
	require.Equal(t, want, frameIDs(t, r.frames), "every event once, in order, through the NATS restart")
	require.Equal(t, want[2:], frameIDs(t, late.frames))
	require.Eventually(t, func() bool { return js.src.Health() == nil }, eventsWait, 5*time.Millisecond)
}

// A cursor older than the stream's first message is CURSOR_EXPIRED, as
// one older than the outbox's oldest event is from PostgreSQL: 410 before
// the stream starts. The oldest kept message's own cursor still resumes.
func TestEventStreamFromJetStreamExpiredCursor(t *testing.T) {
	t.Parallel()
	s := setupJetStreamEvents(t)
	var ids []uuid.UUID
	for range 6 {
		ids = append(ids, s.appendEvent(t, "tenant-a", "instance.running"))
	}
	s.waitForwarded(t)
	_, cursors := s.cursorsOf(t, "instance.running")
	nc, err := nats.Connect(s.nats.URL)
	require.NoError(t, err)
	defer nc.Close()
	jsm, err := nc.JetStream()
	require.NoError(t, err)
	require.NoError(t, jsm.PurgeStream(natsink.DefaultStream, &nats.StreamPurgeRequest{Sequence: 4})) // the first 3 go
	js := s.natsAPI(t, 1, 0)
	for _, c := range cursors[:3] {
		for _, q := range []struct{ query, lastEventID string }{{"", c}, {"after=" + c, ""}} {
			sse := js.openStream(t, s.operator, q.query, q.lastEventID)
			body, err := io.ReadAll(sse.res.Body)
			require.NoError(t, err)
			requireCursorExpired(t, sse.res.StatusCode, body, "stream from JetStream after a purged event")
		}
	}
	ok := js.openStream(t, s.operator, "", cursors[3])
	require.Equal(t, http.StatusOK, ok.res.StatusCode)
	ok.first(t)
	require.Equal(t, ids[4:], frameIDs(t, ok.eventFrames(t, 2)))
}
