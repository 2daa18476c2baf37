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
