package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/wire"
)

// hello dials url with token and says hello; it returns the gateway's
// answer: the welcome, or the error its close frame makes of the read.
func hello(ctx context.Context, url, token string) (*websocket.Conn, wire.Message, error) {
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": []string{"Bearer " + token}}})
	if err != nil {
		return nil, wire.Message{}, err
	}
	b, err := json.Marshal(wire.Message{Type: wire.TypeHello, JournalID: "j1"})
	if err != nil {
		return ws, wire.Message{}, err
	}
	if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
		return ws, wire.Message{}, err
	}
	_, data, err := ws.Read(ctx)
	if err != nil {
		return ws, wire.Message{}, err
	}
	var m wire.Message
	if err := json.Unmarshal(data, &m); err != nil {
		return ws, m, err
	}
	if m.Type != wire.TypeWelcome {
		return ws, m, fmt.Errorf("got %q, not a welcome", m.Type)
	}
	return ws, m, nil
}

// A daemon that says hello on a second connection while its first one's
// session is opening (a stolen credential opening many at once, or a bug)
// is refused before any database work: a storm of them used to queue one
// open transaction per connection, each holding the gateway's lease row
// FOR SHARE while it waited for the node's row, until the lease renewal
// timed out behind them and the gateway dropped every node's session. And
// the session the gateway holds is the one the database holds: two opens
// that raced could register the older epoch last, leaving the node
// connected in the database at an epoch no gateway held.
func TestSecondOpenOfANodeWhileOneIsOpeningIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	g, url := f.liveGateway("gw1")
	opened := make(chan int64, 8)
	release := make(chan struct{})
	var calls atomic.Int32
	gateway.SetAfterOpen(g, func(_ string, epoch int64) {
		opened <- epoch
		if calls.Add(1) == 1 {
			<-release // the first open waits here, committed, not held yet
		}
	})
	ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()

	type answer struct {
		ws      *websocket.Conn
		welcome wire.Message
		err     error
	}
	first := make(chan answer, 1)
	go func() {
		ws, m, err := hello(ctx, url, cred.Token)
		first <- answer{ws, m, err}
	}()
	var epoch int64
	select {
	case epoch = <-opened:
	case <-ctx.Done():
		t.Fatal("the first session never opened")
	}

	ws, m, err := hello(ctx, url, cred.Token)
	if ws != nil {
		defer ws.CloseNow()
	}
	require.Error(t, err, "a second connection opening while the first is: welcomed at epoch %d", m.SessionEpoch)
	require.Equal(t, websocket.StatusTryAgainLater, websocket.CloseStatus(err), "err: %v", err)
	require.Equal(t, epoch, f.session("n1").SessionEpoch, "the refused connection opened nothing")

	close(release)
	a := <-first
	require.NoError(t, a.err)
	defer a.ws.CloseNow()
	require.Equal(t, epoch, a.welcome.SessionEpoch)
	sess := f.session("n1")
	require.True(t, sess.Connected)
	require.Equal(t, map[string]int64{"n1": sess.SessionEpoch}, g.Sessions(), "the gateway holds the database's session")

	// Once it is open, a new connection supersedes it as ever.
	ws2, m2, err := hello(ctx, url, cred.Token)
	require.NoError(t, err)
	defer ws2.CloseNow()
	require.Equal(t, epoch+1, m2.SessionEpoch)
	require.Equal(t, map[string]int64{"n1": epoch + 1}, g.Sessions())
	f.requireInvariants()
}

// A node's daemon has ten sessions opened in a row, then one a second:
// one that dials faster (a stolen credential reconnecting in a loop) is
// answered 429 with Retry-After before the upgrade, and the database
// opens nothing for it. Each dial was an open transaction before, and with
// a close in between a node.connected and a node.disconnected event. Other
// nodes are not limited by it.
func TestSessionOpensOfANodeAreBounded(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	other := f.join("n2", "metal")
	var clock sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := &gateway.Gateway{ID: "gw1", Owner: "gw1-process", Commands: f.s,
		Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now }}
	require.NoError(t, g.Renew(f.ctx))
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	url := "ws://" + strings.TrimPrefix(srv.URL, "http://") + wire.Path
	ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()

	for range 10 {
		ws, _ := f.connect(url, cred.Token)
		require.NoError(t, ws.Close(websocket.StatusNormalClosure, ""))
	}
	epoch := f.session("n1").SessionEpoch
	_, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": []string{"Bearer " + cred.Token}}})
	require.Error(t, err, "an eleventh session within the second")
	require.NotNil(t, resp)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	require.Equal(t, epoch, f.session("n1").SessionEpoch, "nothing opened")

	f.connect(url, other.Token) // another node is not limited by n1

	clock.Lock()
	now = now.Add(time.Second)
	clock.Unlock()
	_, welcome := f.connect(url, cred.Token)
	require.Equal(t, epoch+1, welcome.SessionEpoch, "one more a second later")
	f.requireInvariants()
}
