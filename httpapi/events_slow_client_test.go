package httpapi_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
)

// A client that stops reading (its TCP window stays shut) is dropped: its
// stream's writes block once the connection's capped send buffer is full,
// and the write timeout ends the stream; a client reading alongside gets
// every event. 2 MiB of events is half of what Linux would buffer for the
// connection by itself (net.ipv4.tcp_wmem's 4 MiB), where the stuck
// stream's writes never blocked and it stayed registered.
func TestEventStreamDropsAClientThatStopsReading(t *testing.T) {
	t.Parallel()
	es := setupEventsWith(t, httpapi.EventAPI{WriteTimeout: shortTimeout})
	pub := &eventServer{testServer: es.on(serveWith(t, es.echo, httpapi.ServerConfig{})), broker: es.broker}

	stuck := dial(t, pub.url)
	require.NoError(t, stuck.(*net.TCPConn).SetReadBuffer(4<<10))
	_, err := fmt.Fprintf(stuck, "GET /v1/events/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", pub.operator)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return pub.broker.Streams() == 1 }, eventsWait, time.Millisecond)
	reader := pub.openStream(t, pub.operator, "", "")
	require.Equal(t, http.StatusOK, reader.res.StatusCode)
	require.Equal(t, 2, pub.broker.Streams())

	const n = 64
	payload := strings.Repeat("x", 32<<10)
	want := make([]uuid.UUID, n)
	for i := range want {
		e, err := core.NewEvent("x.created", "tenant-a", fmt.Sprintf("subj-%d", i), map[string]string{"payload": payload})
		require.NoError(t, err)
		commandstest.AppendEvents(t, pub.pg.Pool, e)
		want[i] = e.ID
	}
	got, _ := reader.events(t, n)
	require.Equal(t, want, got, "the reading client gets every event")
	require.Eventually(t, func() bool { return pub.broker.Streams() == 1 }, eventsWait, 5*time.Millisecond,
		"the client that stopped reading is dropped")
}
