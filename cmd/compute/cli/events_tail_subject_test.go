package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// `events tail --subject` asks the server for that subject's stream on
// every connection, the reconnect with Last-Event-ID included, and the
// command it names to resume an interrupted tail keeps the subject: its
// cursor is the filtered stream's, which the heartbeat moves past the
// events of other subjects.
func TestEventsTailSubjectIsAskedOnEveryStream(t *testing.T) {
	t.Parallel()
	const (
		subject   = "reservations/rsv_1"
		opened    = "00000000000000000000000000000000"
		lastEvent = "00000000000000010000000000000001"
		heartbeat = "00000000000000090000000000000001"
	)
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Get("Last-Event-ID")+" subject="+r.URL.Query().Get("subject"))
		n := len(asked)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if n > 1 {
			fmt.Fprintf(w, "retry: 10\nid: %s\n\n", heartbeat)
			w.(http.Flusher).Flush()
			interrupt()
			<-r.Context().Done()
			return
		}
		fmt.Fprintf(w, "retry: 10\nid: %s\n\n", opened)
		fmt.Fprintf(w, "id: %s\nevent: reservation.released\ndata: {\"id\":\"00000000-0000-0000-0000-000000000001\","+
			"\"type\":\"reservation.released\",\"tenantId\":\"acme\",\"subject\":%q,\"data\":{},"+
			"\"time\":\"2030-01-01T00:00:00Z\"}\n\n", lastEvent, subject)
		fmt.Fprintf(w, ": heartbeat\nid: %s\n\n", heartbeat)
	}))
	defer srv.Close()

	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_secret")
	var out, errOut bytes.Buffer
	c := newCLI(Program{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return inv.env[k] }})
	c.configPath = inv.configPath
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, c, []string{"events", "tail", "--from-start", "--subject", subject, "-o", "json"})
	}()
	select {
	case code := <-done:
		require.Equal(t, 0, code, "an interrupted tail exits 0; stderr: %s", errOut.String())
	case <-time.After(time.Minute):
		t.Fatal("events tail did not end when interrupted")
	}
	mu.Lock()
	require.Equal(t, []string{" subject=" + subject, heartbeat + " subject=" + subject}, asked)
	mu.Unlock()
	require.Contains(t, errOut.String(), "compute: interrupted; resume where it stopped with --after "+heartbeat+" --subject "+subject+"\n")
}

// A subject's tail refused with CURSOR_EXPIRED names the command that
// starts it again with its filters.
func TestEventsTailSubjectExpiredKeepsTheSubject(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		fmt.Fprint(w, `{"error":{"code":"CURSOR_EXPIRED","message":"cursor 00000000000000000000000000000001 is older than the retained event history: list events again without a cursor"}}`)
	}))
	defer srv.Close()
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_secret")
	_, errOut, code := inv.run("events", "tail", "--after", "00000000000000000000000000000001",
		"--type", "reservation.booked", "--subject", "reservations/rsv_1")
	require.Equal(t, exitCursorExpired, code, errOut)
	require.Contains(t, errOut, "`compute events tail --from-start --type reservation.booked --subject reservations/rsv_1`")
}
