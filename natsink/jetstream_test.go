package natsink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/natsink"
	"github.com/bettercompute/compute/outbox"
)

// waitFor bounds every wait of these tests: on the database (other test
// packages share its server and can hold the outbox frontier back) and
// on NATS.
const waitFor = 60 * time.Second

// fastConfig is a sink configuration whose waits are short enough for a
// test: reconnect and retry within milliseconds.
func fastConfig(url string) natsink.Config {
	return natsink.Config{
		URL: url, Name: "natsink-test", ReconnectWait: 20 * time.Millisecond, PublishTimeout: time.Second,
		RetryInitial: 5 * time.Millisecond, RetryMax: 100 * time.Millisecond,
	}
}

// logWatch is a process's log: kept in memory and shown when the test
// fails, and seen, closed the first time a line whose message starts
// with watched is logged.
type logWatch struct {
	*watchState
	handler slog.Handler
}

type watchState struct {
	watched string
	seen    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (s *watchState) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func newLogWatch(t *testing.T, name, watched string) *logWatch {
	s := &watchState{watched: watched, seen: make(chan struct{})}
	t.Cleanup(func() {
		if t.Failed() {
			s.mu.Lock()
			t.Logf("log of %s:\n%s", name, s.buf.String())
			s.mu.Unlock()
		}
	})
	return &logWatch{s, slog.NewTextHandler(s, &slog.HandlerOptions{Level: slog.LevelWarn})}
}

func (w *logWatch) Enabled(ctx context.Context, l slog.Level) bool { return w.handler.Enabled(ctx, l) }
func (w *logWatch) WithAttrs(a []slog.Attr) slog.Handler {
	return &logWatch{w.watchState, w.handler.WithAttrs(a)}
}
func (w *logWatch) WithGroup(g string) slog.Handler {
	return &logWatch{w.watchState, w.handler.WithGroup(g)}
}
func (w *logWatch) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, w.watched) {
		w.once.Do(func() { close(w.seen) })
	}
	return w.handler.Handle(ctx, r)
}

// process is one `compute serve` with the dispatcher role, as far as the
// sink goes: its NATS connection, its Router with the forwarder, and the
// dispatcher feeding the Router's subscriber under the sink's lease.
type process struct {
	sink *natsink.Sink
	log  *logWatch
	reg  *prometheus.Registry
	// stop stops the process (once; the test's end does too).
	stop func()
}

// startProcess runs a process until the test ends. mw are extra Router
// middleware, innermost (around the forwarder itself).
func startProcess(t *testing.T, d *pgtest.DB, owner string, cfg natsink.Config, mw ...message.HandlerMiddleware) *process {
	t.Helper()
	lw := newLogWatch(t, owner, "outbox dispatch lease lost")
	logger := slog.New(lw)
	reg := prometheus.NewRegistry()
	sink, err := natsink.Connect(cfg, logger, reg)
	require.NoError(t, err)
	router, err := outbox.NewRouter(logger, reg)
	require.NoError(t, err)
	sub := outbox.NewSubscriber(natsink.SinkID, logger)
	sub.NackDelay = 10 * time.Millisecond
	sink.Route(router, sub, d.Pool)
	router.AddMiddleware(mw...)

	ctx, cancel := context.WithCancel(context.Background())
	routerDone, dispDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(routerDone)
		_ = router.Run(ctx)
	}()
	<-router.Running() // the Subscriber's Deliver waits for the Router's subscription
	disp := outbox.NewDispatcher(d.Pool, owner, sub, logger)
	disp.Batch = 10
	disp.RenewEvery = time.Hour // leases lapse when the test moves the simulated clock
	go func() {
		defer close(dispDone)
		disp.Run(ctx, 5*time.Millisecond, nil)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-dispDone
			<-routerDone
			require.NoError(t, sink.Close())
		})
	}
	t.Cleanup(stop)
	return &process{sink: sink, log: lw, reg: reg, stop: stop}
}

// gate hangs the handler once, when armed, right after it forwarded an
// event: the process stops in the middle of a batch, its cursor unsaved,
// like a process in a GC pause or a stopped VM.
type gate struct {
	armed       atomic.Bool
	stuck, wake chan struct{}
}

func newGate() *gate { return &gate{stuck: make(chan struct{}), wake: make(chan struct{})} }

func (g *gate) middleware(h message.HandlerFunc) message.HandlerFunc {
	return func(msg *message.Message) ([]*message.Message, error) {
		out, err := h(msg)
		if err == nil && g.armed.CompareAndSwap(true, false) {
			close(g.stuck)
			select {
			case <-g.wake:
			case <-msg.Context().Done():
			}
		}
		return out, err
	}
}

// Event kinds the load mixes: tenants with characters a subject cannot
// hold, a tenant named like the fleet token, fleet-wide events.
var (
	loadTenants = []string{"acme", "", "beta.corp", "fleet", "a b*>"}
	loadTypes   = []string{"reservation.booked", "node.lost", "gpu.mode_changed", "reservation.released"}
)

// appendLoad appends events from several goroutines at once, each
// transaction holding one to three events, and sends the first error (or
// nil) once every transaction committed.
func appendLoad(d *pgtest.DB, prefix string, goroutines, txPerGoroutine int) <-chan error {
	errs := make(chan error, goroutines)
	for g := range goroutines {
		go func() {
			for i := range txPerGoroutine {
				var events []core.Event
				for k := range 1 + (g+i)%3 {
					n := g*1000 + i*10 + k
					e, err := core.NewEvent(loadTypes[n%len(loadTypes)], loadTenants[n%len(loadTenants)],
						fmt.Sprintf("%s-%d-%d-%d", prefix, g, i, k), map[string]int{"n": n})
					if err != nil {
						errs <- err
						return
					}
					events = append(events, e)
				}
				err := pgx.BeginFunc(context.Background(), d.Pool, func(tx pgx.Tx) error {
					_, err := outbox.Append(context.Background(), db.New(tx), events...)
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	out := make(chan error, 1)
	go func() {
		var first error
		for range goroutines {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		out <- first
	}()
	return out
}

// streamMessages is how many messages the stream holds now (0 while it
// does not exist or NATS is unreachable).
func streamMessages(url string) uint64 {
	nc, err := nats.Connect(url)
	if err != nil {
		return 0
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		return 0
	}
	info, err := js.StreamInfo(natsink.DefaultStream)
	if err != nil {
		return 0
	}
	return info.State.Msgs
}

// cursor is the sink's saved cursor; ok is false when it cannot be read.
func cursor(d *pgtest.DB) (c outbox.Position, ok bool) {
	c, err := outbox.CursorOf(context.Background(), d.Q, natsink.SinkID)
	return c, err == nil
}

// waitDelivered waits until the log holds want events and the sink's
// cursor is at the last of them, and returns them.
func waitDelivered(t *testing.T, d *pgtest.DB, want int) []outbox.Stored {
	t.Helper()
	var log []outbox.Stored
	require.Eventually(t, func() bool {
		var err error
		log, err = outbox.ReadAfter(context.Background(), d.Q, outbox.Position{}, want+1)
		if err != nil || len(log) != want {
			return false
		}
		c, ok := cursor(d)
		return ok && c == log[want-1].Position
	}, waitFor, 5*time.Millisecond, "the sink delivers all %d events", want)
	return log
}

// streamed is one message read back from the stream.
type streamed struct {
	subject string
	seq     uint64
	header  nats.Header
	data    []byte
}

// readStream reads the whole stream back with an ordered consumer.
func readStream(t *testing.T, url string) (*nats.StreamInfo, []streamed) {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	defer nc.Close()
	js, err := nc.JetStream()
	require.NoError(t, err)
	info, err := js.StreamInfo(natsink.DefaultStream)
	require.NoError(t, err)
	sub, err := js.SubscribeSync(natsink.SubjectPrefix+".>", nats.BindStream(natsink.DefaultStream), nats.OrderedConsumer())
	require.NoError(t, err)
	defer func() { _ = sub.Unsubscribe() }()
	out := make([]streamed, 0, info.State.Msgs)
	for range info.State.Msgs {
		m, err := sub.NextMsg(waitFor)
		require.NoError(t, err)
		meta, err := m.Metadata()
		require.NoError(t, err)
		out = append(out, streamed{subject: m.Subject, seq: meta.Sequence.Stream, header: m.Header, data: m.Data})
	}
	return info, out
}

// Under a load of committed events from concurrent transactions, with
// NATS SIGKILLed and restarted on the same store in the middle of it, and
// the sink's lease taken over from a process that hangs mid-batch (and
// wakes up to finish its batch as a zombie), the stream holds every
// committed event exactly once, in log order, each on its subject with
// its headers and its JSON envelope.
func TestJetStreamHoldsEveryEventOnceInLogOrder(t *testing.T) {
	t.Parallel()
	srv := testenv.StartNATS(t)
	d := pgtest.New(t)
	cfg := fastConfig(srv.URL)
	zombie := newGate()
	p1 := startProcess(t, d, "p1", cfg, zombie.middleware)

	// NATS dies in the middle of a load and comes back on the same port
	// and store while more events are committed.
	load := appendLoad(d, "a", 4, 40)
	require.Eventually(t, func() bool { return streamMessages(srv.URL) >= 20 }, waitFor, 5*time.Millisecond,
		"the first events reach the stream")
	srv.Kill()
	require.Eventually(t, func() bool { return p1.sink.Health() != nil }, waitFor, 5*time.Millisecond,
		"the sink sees NATS gone")
	require.NoError(t, <-load)
	load = appendLoad(d, "b", 4, 20)
	srv.Start()
	require.NoError(t, <-load)
	total := countEvents(4, 40) + countEvents(4, 20)
	waitDelivered(t, d, total)
	require.NoError(t, p1.sink.Health())

	// p1 hangs in the middle of a batch; its lease lapses and p2 takes
	// the sink over at p1's saved cursor while events keep coming. Then p1
	// wakes up and finishes its batch, a zombie: JetStream drops its
	// copies, and the fence refuses its cursor.
	zombie.armed.Store(true)
	load = appendLoad(d, "c", 4, 20)
	select {
	case <-zombie.stuck:
	case <-time.After(waitFor):
		t.Fatal("p1 never forwarded an event after the gate was armed")
	}
	saved, ok := cursor(d)
	require.True(t, ok)
	d.AdvanceSimClock(t, lease.TTL+time.Second)
	p2 := startProcess(t, d, "p2", cfg)
	more := appendLoad(d, "d", 4, 20)
	require.Eventually(t, func() bool { c, ok := cursor(d); return ok && saved.Less(c) }, waitFor, 5*time.Millisecond,
		"p2 takes the lease over and moves the cursor")
	held, err := d.Q.LeaseGet(context.Background(), outbox.LeaseName(natsink.SinkID))
	require.NoError(t, err)
	require.Equal(t, "p2", held.Owner)
	close(zombie.wake)
	select {
	case <-p1.log.seen:
	case <-time.After(waitFor):
		t.Fatal("the zombie p1 never found its lease lost")
	}
	require.NoError(t, <-load)
	require.NoError(t, <-more)
	total += 2 * countEvents(4, 20)
	log := waitDelivered(t, d, total)
	require.NoError(t, p2.sink.Health())

	info, msgs := readStream(t, srv.URL)
	require.Equal(t, []string{"compute.>"}, info.Config.Subjects)
	require.Equal(t, natsink.DefaultDuplicateWindow, info.Config.Duplicates)
	require.Equal(t, nats.FileStorage, info.Config.Storage)
	require.Equal(t, nats.LimitsPolicy, info.Config.Retention)

	byID := map[string]outbox.Stored{}
	for _, e := range log {
		byID[e.ID.String()] = e
	}
	copies := map[string]int{}
	var last outbox.Position
	lastOf := map[string]outbox.Position{}
	for _, m := range msgs {
		id := m.header.Get(nats.MsgIdHdr)
		copies[id]++
		e, ok := byID[id]
		require.True(t, ok, "stream message %d (%s) is an event of the outbox", m.seq, id)
		require.Equal(t, natsink.Subject(e.TenantID, e.Type), m.subject)
		require.Equal(t, e.Type, m.header.Get(outbox.MetadataType))
		require.Equal(t, e.Position.String(), m.header.Get(outbox.MetadataPosition))
		require.True(t, lastOf[m.subject].Less(e.Position), "log order on subject %s at stream seq %d", m.subject, m.seq)
		require.True(t, last.Less(e.Position), "log order across the stream at seq %d", m.seq)
		lastOf[m.subject], last = e.Position, e.Position

		// A watermill-nats subscriber reads the message back as the one
		// the outbox made.
		wm, err := (&wmnats.NATSMarshaler{}).Unmarshal(&nats.Msg{Subject: m.subject, Header: m.header, Data: m.data})
		require.NoError(t, err)
		got, err := outbox.EventFromMessage(wm)
		require.NoError(t, err)
		require.Equal(t, e.ID, got.ID)
		require.Equal(t, e.Position, got.Position)
		require.Equal(t, e.TenantID, got.TenantID)
		require.Equal(t, e.Subject, got.Subject)
		require.JSONEq(t, string(e.Data), string(got.Data))
		var env map[string]any
		require.NoError(t, json.Unmarshal(m.data, &env))
		require.Contains(t, env, "tenantId", "the public envelope always has tenantId")
	}
	var missing []uuid.UUID
	duplicates := 0
	for _, e := range log {
		if copies[e.ID.String()] == 0 {
			missing = append(missing, e.ID)
		}
	}
	for _, n := range copies {
		duplicates += n - 1
	}
	require.Empty(t, missing, "every committed event is in the stream")
	require.Zero(t, duplicates, "no event is in the stream twice")
	require.Len(t, msgs, total)
	require.Greater(t, len(lastOf), 4, "the load spread over several subjects")
}

// countEvents is how many events appendLoad(goroutines, txs) appends:
// transaction i of goroutine g holds 1 + (g+i)%3.
func countEvents(goroutines, txs int) int {
	n := 0
	for g := range goroutines {
		for i := range txs {
			n += 1 + (g+i)%3
		}
	}
	return n
}

// A server that is down when the sink starts costs nothing but the wait:
// Connect returns at once and Health says why nothing is forwarded.
func TestConnectWithoutServer(t *testing.T) {
	t.Parallel()
	sink, err := natsink.Connect(natsink.Config{URL: "nats://127.0.0.1:1"}, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	require.ErrorContains(t, sink.Health(), "not connected to NATS")
	require.NoError(t, sink.Close())
}
