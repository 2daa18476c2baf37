package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/wire"
)

// A gateway started again after a crash waits for its predecessor's lease
// to lapse (up to lease.GatewayTTL and a renewal) and answers every daemon
// 503 meanwhile; the daemons dial it every second for that long
// (agent/reconnect.go). Those answers cost the database nothing: the
// gateway looks at its lease before it looks the node credential up.
func TestGatewayWithoutItsLeaseAnswersWithoutALookup(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	log := &pgtest.StatementLog{}
	pool, err := pg.Connect(f.ctx, f.d.URL, pg.PoolOptions{MaxConns: 2, IdleInTxTimeout: time.Minute,
		Tracer: pg.RoundTripTracer{Next: log}})
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	g := &gateway.Gateway{ID: "gw1", Owner: "gw1-process", Commands: commands.New(pool, commands.Config{})}
	srv := httptest.NewServer(g) // never renewed: it does not hold its lease
	t.Cleanup(srv.Close)

	for range 3 {
		req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, srv.URL+wire.Path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+cred.Token)
		res, err := srv.Client().Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	}
	require.Empty(t, log.Take(), "a gateway without its lease reaches no database to refuse a dial")
}
