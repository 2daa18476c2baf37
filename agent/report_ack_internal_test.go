package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/wire"
)

// An instance's end written to a gateway that died before it recorded it
// (killed, or its transaction failed) is not lost: the daemon keeps it
// until the gateway acknowledges it, and sends it again on its next
// session, before its inventory (a successor daemon too, from the state
// directory), so the control plane ends the instance `failed` with its
// exit status rather than `lost` at that inventory. Acknowledged, it is
// not sent again. To a gateway of a release that does not acknowledge
// (no reportAcks in its welcome) it is sent once, as before: kept for
// ever, it would be sent again at every session.
func TestAnEndIsKeptUntilTheGatewayAcknowledgesIt(t *testing.T) {
	for _, acks := range []bool{true, false} {
		t.Run(map[bool]string{true: "acking", false: "old-gateway"}[acks], func(t *testing.T) {
			td := newTestDaemon(t)
			td.setCurrent(nil, nil) // no session yet
			gw := newStubGateway(t)

			// Session 1: the end is written, and the gateway dies.
			s := gw.open(t, td.daemon, acks)
			s.untilInventory(t)
			code := int32(3)
			td.reportExited(&instanceProcess{id: "ins_ack", allocationID: "alc_ack", pid: 42}, &code, "exit status 3")
			first := s.next(t, wire.TypeInstanceStopped)
			s.die(t)
			if !acks {
				require.Equal(t, 0, unsentCount(td.daemon), "kept for a gateway that never acknowledges")
				_, err := os.Stat(filepath.Join(td.cfg.StateDir, unsentFile))
				require.ErrorIs(t, err, os.ErrNotExist)
				require.Empty(t, gw.open(t, td.daemon, acks).untilInventory(t), "sent again to a gateway that does not acknowledge")
				return
			}
			require.Equal(t, 1, unsentCount(successor(t, td.daemon)), "a successor would not send it")

			// Session 2: sent again before the inventory, then acknowledged.
			s = gw.open(t, td.daemon, acks)
			again := s.untilInventory(t)
			require.Len(t, again, 1, "an end the gateway did not acknowledge is not sent again")
			require.Equal(t, first.ReportID, again[0].ReportID)
			require.NotEmpty(t, first.ReportID)
			var p wire.InstanceStopped
			require.NoError(t, json.Unmarshal(again[0].Payload, &p))
			require.Equal(t, "ins_ack", p.InstanceID)
			require.True(t, p.Exited)
			require.Equal(t, int32(3), *p.ExitCode)
			s.send(t, wire.Message{Type: wire.TypeReportAck, ReportID: first.ReportID})
			require.Eventually(t, func() bool { return unsentCount(td.daemon) == 0 }, 10*time.Second, time.Millisecond,
				"an acknowledged end is still kept")
			_, err := os.Stat(filepath.Join(td.cfg.StateDir, unsentFile))
			require.ErrorIs(t, err, os.ErrNotExist, "an acknowledged end is still kept on disk")
			s.die(t)

			// Session 3: acknowledged, it is not sent again.
			require.Empty(t, gw.open(t, td.daemon, acks).untilInventory(t), "an acknowledged end is sent again")
		})
	}
}

// stubGateway hands each session a daemon opens to the test.
type stubGateway struct {
	url   string
	conns chan *stubSession
}

// stubSession is one session at the stub gateway; the test speaks for the
// gateway on it.
type stubSession struct {
	ws     *websocket.Conn
	gone   chan struct{}
	ended  chan struct{} // the daemon's session returned
	cancel context.CancelFunc
}

func newStubGateway(t *testing.T) *stubGateway {
	gw := &stubGateway{conns: make(chan *stubSession, 1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		ws.SetReadLimit(wire.MaxMessageBytes)
		s := &stubSession{ws: ws, gone: make(chan struct{})}
		gw.conns <- s
		select {
		case <-s.gone:
		case <-r.Context().Done():
		}
		_ = ws.CloseNow()
	}))
	t.Cleanup(srv.Close)
	gw.url = "ws://" + strings.TrimPrefix(srv.URL, "http://")
	return gw
}

// open runs a session of d against the stub and answers its hello with a
// welcome that says acks.
func (gw *stubGateway) open(t *testing.T, d *daemon, acks bool) *stubSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = d.session(ctx, ctx, gw.url)
	}()
	var s *stubSession
	select {
	case s = <-gw.conns:
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("the daemon never connected")
	}
	s.ended, s.cancel = ended, cancel
	t.Cleanup(func() { s.die(t) })
	require.Equal(t, wire.TypeHello, s.next(t, wire.TypeHello).Type)
	s.send(t, wire.Message{Type: wire.TypeWelcome, NodeID: "n1", SessionEpoch: 1, ReportAcks: acks})
	return s
}

// next is the next message of type typ (heartbeats and replays skipped).
func (s *stubSession) next(t *testing.T, typ string) wire.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		m, err := receive(ctx, s.ws)
		require.NoError(t, err, "waiting for %s", typ)
		if m.Type == typ {
			return m
		}
		require.Contains(t, []string{wire.TypeHeartbeat, wire.TypeReplay}, m.Type, "waiting for %s", typ)
	}
}

// untilInventory is the instance ends the daemon sends before its inventory.
func (s *stubSession) untilInventory(t *testing.T) []wire.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ends []wire.Message
	for {
		m, err := receive(ctx, s.ws)
		require.NoError(t, err, "waiting for the inventory")
		switch m.Type {
		case wire.TypeInventory:
			return ends
		case wire.TypeInstanceStopped:
			ends = append(ends, m)
		}
	}
}

func (s *stubSession) send(t *testing.T, m wire.Message) {
	t.Helper()
	require.NoError(t, send(context.Background(), s.ws, m))
}

// die drops the connection as a killed gateway does, and waits for the
// daemon's session to end.
func (s *stubSession) die(t *testing.T) {
	t.Helper()
	select {
	case <-s.gone:
		return
	default:
	}
	close(s.gone)
	_ = s.ws.CloseNow()
	select {
	case <-s.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon's session never ended")
	}
	s.cancel()
}

// An end the gateway took but did not acknowledge (its transaction failed,
// the session stayed open) is sent again on the same session once it has
// gone unacknowledged for reportResendAfter on the daemon's clock, then
// after twice as long, in the order they were kept, not only at the next
// session: that could be days
// away, with the instance shown `running` all along. Acknowledged, it is
// not sent again.
func TestAnUnacknowledgedEndIsSentAgainOnTheSameSession(t *testing.T) {
	td := newTestDaemon(t)
	td.setCurrent(nil, nil) // no session yet
	clock := &fakeClock{now: t0.Add(time.Minute)}
	td.now = clock.Now
	// The session's waits are the test's: each is announced on waits and
	// ends, moving the clock, when the test says so on wake.
	waits, wake := make(chan time.Duration), make(chan struct{})
	td.sleepFunc = func(ctx context.Context, dur time.Duration) bool {
		select {
		case waits <- dur:
		case <-ctx.Done():
			return false
		}
		select {
		case <-wake:
			clock.advance(dur)
			return true
		case <-ctx.Done():
			return false
		}
	}
	waiting := func() time.Duration {
		t.Helper()
		select {
		case dur := <-waits:
			return dur
		case <-time.After(10 * time.Second):
			t.Fatal("the daemon never waits to send unacknowledged reports again")
			return 0
		}
	}
	gw := newStubGateway(t)
	s := gw.open(t, td.daemon, true)
	s.untilInventory(t)

	require.Equal(t, reportResendAfter, waiting(), "nothing to send again: the first wait")
	code := int32(3)
	td.reportExited(&instanceProcess{id: "ins_again", allocationID: "alc_again", pid: 42}, &code, "exit status 3")
	first := s.next(t, wire.TypeInstanceStopped)
	sentAt := clock.Now()

	// The gateway's transaction failed: no ack. Once the report has gone
	// unacknowledged for the interval, the same one comes again, on the
	// same session.
	wake <- struct{}{}
	again := s.next(t, wire.TypeInstanceStopped)
	require.Equal(t, first.ReportID, again.ReportID)
	require.Equal(t, first.Payload, again.Payload)
	require.Equal(t, reportResendAfter, clock.Now().Sub(sentAt))
	require.Equal(t, 1, unsentCount(td.daemon))

	// The next try waits twice as long: not at the next look, which comes
	// before a second end made then ...
	require.Equal(t, reportResendAfter, waiting())
	wake <- struct{}{}
	waiting()
	td.reportExited(&instanceProcess{id: "ins_second", allocationID: "alc_second", pid: 43}, &code, "exit status 3")
	second := s.next(t, wire.TypeInstanceStopped)
	require.NotEqual(t, first.ReportID, second.ReportID, "sent again without backing off")
	// ... but at the one after, with the second end, due too, after it.
	wake <- struct{}{}
	require.Equal(t, first.ReportID, s.next(t, wire.TypeInstanceStopped).ReportID)
	require.Equal(t, second.ReportID, s.next(t, wire.TypeInstanceStopped).ReportID)
	require.Equal(t, 3*reportResendAfter, clock.Now().Sub(sentAt))

	// Acknowledged, they are forgotten and not sent again: the next end on
	// the session is a new one.
	s.send(t, wire.Message{Type: wire.TypeReportAck, ReportID: first.ReportID})
	s.send(t, wire.Message{Type: wire.TypeReportAck, ReportID: second.ReportID})
	require.Eventually(t, func() bool { return unsentCount(td.daemon) == 0 }, 10*time.Second, time.Millisecond,
		"an acknowledged end is still kept")
	for range 10 {
		waiting()
		wake <- struct{}{}
	}
	waiting()
	td.reportExited(&instanceProcess{id: "ins_next", allocationID: "alc_next", pid: 44}, &code, "exit status 3")
	next := s.next(t, wire.TypeInstanceStopped)
	require.NotContains(t, []string{first.ReportID, second.ReportID}, next.ReportID, "an acknowledged end is sent again")
}
