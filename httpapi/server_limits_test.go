package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/httpapi"
)

// Timeouts in these tests are short so the tests are quick; waits are
// bounded by closeWait and only lower bounds of elapsed time are asserted.
const (
	shortTimeout = 300 * time.Millisecond
	closeWait    = 15 * time.Second
)

// dial opens a raw connection to a test server's base URL.
func dial(t *testing.T, base string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// waitClosed reads until the server closes conn (EOF or reset) and returns
// when that happened; it fails the test if conn is still open after
// closeWait.
func waitClosed(t *testing.T, conn net.Conn, r io.Reader) time.Time {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(closeWait)))
	_, err := io.Copy(io.Discard, r)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the server kept the connection open for %s", closeWait)
	}
	return time.Now()
}

// An unauthenticated client trickling a body is cut off at the read
// timeout, not held for as long as it keeps trickling.
func TestServerCutsOffATrickledBody(t *testing.T) {
	t.Parallel()
	s := setup(t)
	base := serveWith(t, s.echo, httpapi.ServerConfig{ReadTimeout: shortTimeout, ReadHeaderTimeout: shortTimeout})
	start := time.Now() // the server's clock starts at the accept, after this
	conn := dial(t, base)
	_, err := fmt.Fprintf(conn, "POST /v1/tokens HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
	require.NoError(t, err)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // one byte every 20 ms: 100 kB would take over half an hour
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	closed := waitClosed(t, conn, conn)
	require.GreaterOrEqual(t, closed.Sub(start), shortTimeout, "cut off at the read timeout, not before")
}

// Headers past MaxHeaderBytes are refused with 431.
func TestServerRefusesOversizedHeaders(t *testing.T) {
	t.Parallel()
	s := setup(t)
	pub := s.on(serveWith(t, s.echo, httpapi.ServerConfig{})) // the default, 64 KiB

	req, err := http.NewRequest(http.MethodGet, pub.url+"/healthz", nil)
	require.NoError(t, err)
	req.Header.Set("X-Padding", strings.Repeat("a", 32<<10))
	require.Equal(t, http.StatusOK, pub.do(t, req).status, "32 KiB of headers is fine")

	// The server answers once it has read its limit and hangs up; the rest
	// of the request is never read. A raw connection, so the answer is
	// read whatever happens to the write.
	conn := dial(t, pub.url)
	go func() {
		_, _ = fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: %s\r\n\r\n", strings.Repeat("a", 100<<10))
	}()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(closeWait)))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, res.StatusCode)
}

// A keep-alive connection left idle is closed at the idle timeout.
func TestServerClosesIdleKeepAlives(t *testing.T) {
	t.Parallel()
	s := setup(t)
	base := serveWith(t, s.echo, httpapi.ServerConfig{IdleTimeout: shortTimeout})
	conn := dial(t, base)
	br := bufio.NewReader(conn)
	_, err := fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.False(t, res.Close, "the connection is kept alive")
	idleSince := time.Now()
	closed := waitClosed(t, conn, br)
	require.GreaterOrEqual(t, closed.Sub(idleSince), shortTimeout-10*time.Millisecond)
}

// Past MaxConns, a new connection is not served until one closes.
func TestServerCapsConnections(t *testing.T) {
	t.Parallel()
	s := setup(t)
	base := serveWith(t, s.echo, httpapi.ServerConfig{MaxConns: 1})
	get := func(conn net.Conn) {
		_, err := fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
	}
	first := dial(t, base)
	get(first)
	res, err := http.ReadResponse(bufio.NewReader(first), nil)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)

	second := dial(t, base) // the kernel accepts it; the server does not
	get(second)
	require.NoError(t, second.SetReadDeadline(time.Now().Add(shortTimeout)))
	_, err = second.Read(make([]byte, 1))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "no answer while the first connection holds the only slot")

	require.NoError(t, first.Close())
	require.NoError(t, second.SetReadDeadline(time.Now().Add(closeWait)))
	res, err = http.ReadResponse(bufio.NewReader(second), nil)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
}

// An event stream is exempt from the server's read and write timeouts: it
// keeps delivering long after both ran out.
func TestEventStreamOutlivesServerTimeouts(t *testing.T) {
	t.Parallel()
	es := setupEvents(t, 20*time.Millisecond)
	pub := &eventServer{testServer: es.on(serveWith(t, es.echo, httpapi.ServerConfig{
		ReadHeaderTimeout: shortTimeout, ReadTimeout: shortTimeout, WriteTimeout: shortTimeout, IdleTimeout: shortTimeout,
	})), broker: es.broker}
	opened := time.Now()
	c := pub.openStream(t, pub.operator, "", "")
	require.Equal(t, http.StatusOK, c.res.StatusCode)
	// Heartbeats keep coming past three times every timeout…
	for time.Since(opened) < 3*shortTimeout {
		select {
		case _, ok := <-c.frames:
			require.True(t, ok, "the stream ended after %s", time.Since(opened))
		case <-time.After(eventsWait):
			t.Fatal("no frame within the wait")
		}
	}
	// …and so do events.
	id := pub.appendEvent(t, "tenant-a", "x.created")
	got, _ := c.events(t, 1)
	require.Equal(t, id, got[0])
}

// A WebSocket session (the gateway's daemon sessions) outlives the
// server's read and write timeouts: net/http clears a connection's
// deadlines when it is hijacked (http.Hijacker only says it "may" leave
// them set; should that change, the gateway must clear them before
// websocket.Accept).
func TestWebSocketsOutliveServerTimeouts(t *testing.T) {
	t.Parallel()
	echoWS := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		for {
			typ, msg, err := ws.Read(r.Context())
			if err != nil {
				return
			}
			if err := ws.Write(r.Context(), typ, msg); err != nil {
				return
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := httpapi.NewServer("", echoWS, httpapi.ServerConfig{
		ReadHeaderTimeout: shortTimeout, ReadTimeout: shortTimeout, WriteTimeout: shortTimeout,
	})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+ln.Addr().String()+"/", nil)
	require.NoError(t, err)
	defer ws.CloseNow()
	opened := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; time.Since(opened) < 3*shortTimeout; i++ {
		<-tick.C
		msg := fmt.Sprintf("ping %d", i)
		require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(msg)), "after %s", time.Since(opened))
		_, got, err := ws.Read(ctx)
		require.NoError(t, err, "after %s", time.Since(opened))
		require.Equal(t, msg, string(got))
	}
}

// InternalHandler refuses anything but the operations routes.
func TestInternalHandlerServesOnlyOperationsRoutes(t *testing.T) {
	t.Parallel()
	h := httpapi.InternalHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	for path, want := range map[string]int{"/metrics": 204, "/readyz": 204, "/healthz": 204, "/v1/tokens": 404, "/openapi.yaml": 404} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, want, rec.Code, path)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/metrics", nil))
	require.Equal(t, http.StatusNotFound, rec.Code)
}

// The operations routes answer HEAD as GET without the body, on the public
// and the internal listener: load balancers and uptime checks probe with
// HEAD, and a 405 there reads as the service being down.
func TestOperationsRoutesAnswerHead(t *testing.T) {
	t.Parallel()
	s := setup(t)
	for _, srv := range []*httptest.Server{httptest.NewServer(s.echo), httptest.NewServer(httpapi.InternalHandler(s.echo))} {
		t.Cleanup(srv.Close)
		for _, path := range []string{"/healthz", "/readyz"} {
			resp, err := http.Head(srv.URL + path)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
			require.Empty(t, body, path)
		}
	}
	pub := httptest.NewServer(s.echo)
	t.Cleanup(pub.Close)
	resp, err := http.Head(pub.URL + "/openapi.yaml")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
