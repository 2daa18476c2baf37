package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// TestSSEMeasurementsShape runs both SSE measurements against a real
// `compute serve` at the tiny size: every latency client must see every
// event once and in order, and the fan-out must connect every client and
// reach all of them with one event.
func TestSSEMeasurementsShape(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	p := tinyPlan()
	s, err := sseSuite(context.Background(), d.URL, p, mustComputeBinary(t), newProgress(io.Discard))
	require.NoError(t, err)

	require.Positive(t, s.Events)
	require.Equal(t, sseLatencyClients, s.Clients)
	require.Equal(t, s.Events*s.Clients, s.Seen, "every client sees every event")
	require.Len(t, s.SeenPerClient, s.Clients)
	for i, n := range s.SeenPerClient {
		require.Equal(t, s.Events, n, "client %d", i)
	}
	require.Zero(t, s.Missed)
	require.Zero(t, s.Duplicates)
	require.Zero(t, s.OutOfOrder)
	require.Zero(t, s.Unexpected)
	require.Zero(t, s.Ended, "no stream ends while the client reads")
	require.Positive(t, s.AchievedRate)
	require.Positive(t, s.P50Ms)
	require.GreaterOrEqual(t, s.P99Ms, s.P50Ms)

	require.Equal(t, p.sseClients, s.FanoutClients)
	require.Positive(t, s.RSSPerClient, "open streams cost the server memory")
	require.GreaterOrEqual(t, s.GoroutinesPerClient, 1.0, "at least one server goroutine per stream")
	require.Equal(t, p.sseClients, s.BroadcastReached, "one event reaches every client")
	require.GreaterOrEqual(t, s.BroadcastMaxMs, s.BroadcastP99Ms)
	require.GreaterOrEqual(t, s.BroadcastP99Ms, s.BroadcastP50Ms)
	require.LessOrEqual(t, s.GoroutinesAfterClose, s.GoroutinesBefore+sseLeftoverGoroutines,
		"closed streams leave no goroutines behind in the server")

	var out bytes.Buffer
	s.print(&out)
	require.Contains(t, out.String(), "SSE  commit → client (10 clients)")
	require.Contains(t, out.String(), "missed 0, dup 0, out of order 0")
}

// TestReadSSE parses frames the way the stream writes them, including the
// first id-only frame and a heartbeat, which carry no event.
func TestReadSSE(t *testing.T) {
	t.Parallel()
	in := "retry: 3000\nid: 0001\n\n: heartbeat\n\nid: 0002\nevent: bench.event\ndata: {\"subject\":\"bench/1\"}\n\nid: 0003\ndata: a\ndata: b\n\n"
	var got []sseFrame
	require.NoError(t, readSSE(strings.NewReader(in), func(f sseFrame, _ time.Time) { got = append(got, f) }))
	require.Equal(t, []sseFrame{
		{id: "0002", event: "bench.event", data: `{"subject":"bench/1"}`},
		{id: "0003", data: "a\nb"},
	}, got)
}

// TestSSEDialError checks that a stream that cannot be opened is a clear
// error naming the stream, and that nothing stays open.
func TestSSEDialError(t *testing.T) {
	t.Parallel()
	addr, err := freeLoopbackAddr() // nothing listens there
	require.NoError(t, err)
	d := sseDialer{client: &http.Client{}, url: "http://" + addr, token: "x", prog: newProgress(io.Discard)}
	s, err := d.open(context.Background(), "test", 5, func(int, sseFrame, time.Time) {})
	require.Nil(t, s)
	require.ErrorContains(t, err, "open SSE stream")
	require.ErrorContains(t, err, "connection refused")
}
