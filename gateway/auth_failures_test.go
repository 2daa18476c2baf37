package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/wire"
)

// An address that keeps presenting bad node credentials is throttled like
// a client failing bearer tokens at the API: past the burst the gateway
// answers 429 with Retry-After and does not look the credential up (no
// statement reaches the database), even a good one; a node connecting from
// another address is not affected.
func TestGatewayThrottlesFailedCredentials(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")

	log := &pgtest.StatementLog{}
	pool, err := pg.Connect(f.ctx, f.d.URL, pg.PoolOptions{MaxConns: 2, IdleInTxTimeout: time.Minute,
		Tracer: pg.RoundTripTracer{Next: log}})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	g := &gateway.Gateway{ID: "gw1", Owner: "gw1-process", Commands: commands.New(pool, commands.Config{}),
		AuthFailureBurst: 3, AuthFailureRate: 0.001} // one attempt back every ~17 minutes
	require.NoError(t, g.Renew(f.ctx))
	// The peer address comes from the test, so that one server sees two
	// clients.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RemoteAddr = r.Header.Get("X-Test-Peer")
		g.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	log.Take()

	attempt := func(peer, token string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, srv.URL+wire.Path, nil)
		require.NoError(t, err)
		req.Header.Set("X-Test-Peer", peer)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := srv.Client().Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		return res
	}
	const attacker = "203.0.113.7:40000"
	for i := range 3 {
		res := attempt(attacker, "ncred_not-a-credential")
		require.Equal(t, http.StatusUnauthorized, res.StatusCode, "failure %d is looked up", i+1)
		require.Contains(t, log.Take(), "NodeCredentialAuthenticate", "failure %d costs a lookup", i+1)
	}
	res := attempt(attacker, "ncred_not-a-credential")
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, "past the burst the limiter answers")
	require.NotEmpty(t, res.Header.Get("Retry-After"))
	require.Empty(t, log.Take(), "a throttled attempt reaches no database")
	res = attempt(attacker, cred.Token)
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode, "a throttled address is not looked up at all")
	require.Empty(t, log.Take())

	// The node itself, from its own address, opens its session.
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+strings.TrimPrefix(srv.URL, "http://")+wire.Path, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": []string{"Bearer " + cred.Token}, "X-Test-Peer": []string{"192.0.2.10:50000"}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.CloseNow() })
	hello, err := json.Marshal(wire.Message{Type: wire.TypeHello, JournalID: "j1"})
	require.NoError(t, err)
	require.NoError(t, ws.Write(ctx, websocket.MessageText, hello))
	_, data, err := ws.Read(ctx)
	require.NoError(t, err)
	var welcome wire.Message
	require.NoError(t, json.Unmarshal(data, &welcome))
	require.Equal(t, wire.TypeWelcome, welcome.Type)
	require.Equal(t, "n1", welcome.NodeID)
}
