package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An interrupted tail names the cursor that resumes where it stopped,
// which the stream's heartbeat moves past its last event when events it
// does not show follow: a tail of a quiet type handed the last event's
// cursor instead, and once retention pruned that event, the resumed tail
// was refused with CURSOR_EXPIRED although it had missed nothing.
//
// The server sends one event (cursor …01), then a heartbeat that moves
// the stream to …09 (events of other types followed), and ends the
// stream. The tail reconnects with Last-Event-ID …09, which shows it took
// the heartbeat in; the test interrupts it then.
func TestEventsTailInterruptedNamesTheHeartbeatsCursor(t *testing.T) {
	t.Parallel()
	const (
		opened    = "00000000000000000000000000000000"
		lastEvent = "00000000000000010000000000000001"
		heartbeat = "00000000000000090000000000000001"
	)
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	var mu sync.Mutex
	var resumed []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		resumed = append(resumed, r.Header.Get("Last-Event-ID"))
		n := len(resumed)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if n > 1 { // the reconnect: the tail has read the heartbeat
			fmt.Fprintf(w, "retry: 10\nid: %s\n\n", heartbeat)
			w.(http.Flusher).Flush()
			interrupt()
			<-r.Context().Done()
			return
		}
		fmt.Fprintf(w, "retry: 10\nid: %s\n\n", opened)
		fmt.Fprintf(w, "id: %s\nevent: reservation.released\ndata: {\"id\":\"00000000-0000-0000-0000-000000000001\","+
			"\"type\":\"reservation.released\",\"tenantId\":\"acme\",\"subject\":\"reservations/rsv_1\",\"data\":{},"+
			"\"time\":\"2030-01-01T00:00:00Z\"}\n\n", lastEvent)
		fmt.Fprintf(w, ": heartbeat\nid: %s\n\n", heartbeat)
	}))
	defer srv.Close()

	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_secret")
	var out, errOut bytes.Buffer
	c := newCLI(Program{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return inv.env[k] }})
	c.configPath = inv.configPath
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, c, []string{"events", "tail", "--from-start", "--type", "reservation.released", "-o", "json"})
	}()
	select {
	case code := <-done:
		require.Equal(t, 0, code, "an interrupted tail exits 0; stderr: %s", errOut.String())
	case <-time.After(time.Minute):
		t.Fatal("events tail did not end when interrupted")
	}

	require.Equal(t, 1, strings.Count(out.String(), "\n"), "one event printed: %s", out.String())
	mu.Lock()
	require.Equal(t, []string{"", heartbeat}, resumed, "the reconnect resumed after the heartbeat's id")
	mu.Unlock()
	require.Contains(t, errOut.String(),
		"compute: interrupted; resume where it stopped with --after "+heartbeat+" --type reservation.released\n")
	require.NotContains(t, errOut.String(), lastEvent, "the last event's cursor, which expires with it, is not named")
}

// A tail whose cursor retention pruned past ends with CURSOR_EXPIRED (exit
// 9) and names the flag that starts again from the oldest retained event,
// with the --type it had: the server's advice alone ("list events again
// without a cursor") sent the user to `events list`, which does not follow
// the stream, and never mentioned --from-start. Its stdout stays empty: the
// table's header waits for the stream to open.
func TestEventsTailExpiredNamesFromStart(t *testing.T) {
	t.Parallel()
	const cursor = "00000000000000000000000000000001"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		fmt.Fprintf(w, `{"error":{"code":"CURSOR_EXPIRED","message":"cursor %s is older than the retained event history: list events again without a cursor"}}`, cursor)
	}))
	defer srv.Close()

	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_secret")
	out, errOut, code := inv.run("events", "tail", "--after", cursor, "--type", "reservation.booked,reservation.released")
	require.Equal(t, exitCursorExpired, code, errOut)
	require.Empty(t, out, "a tail refused before its stream opened prints no table header")
	require.Contains(t, errOut, "compute: cursor "+cursor+" is older than the retained event history (CURSOR_EXPIRED, HTTP 410)\n")
	require.Contains(t, errOut, "`compute events tail --from-start --type reservation.booked,reservation.released`")
	require.NotContains(t, errOut, "list events again")
}

// A tail's table rows line up with its header: every column starts where
// its header does. The rows were printed with widths that a reservation's
// subject ("reservations/rsv_" and a UUID) and a node job's overflow, so
// every such row pushed TENANT and CURSOR right of their headers. A value
// longer than its column (a long device id) pushes only its own row, and
// the columns after it that have room start in place again.
func TestEventsTailRowsAlignWithTheHeader(t *testing.T) {
	t.Parallel()
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	events := []struct{ typ, subject, tenant string }{
		{"site.created", "sites/s1", "null"},
		{"reservation.booked", "reservations/rsv_01a24e79-94ff-7794-9044-6aeedfdd5232", `"acme"`},
		{"node_assignment.queued", "node-commands/cmd_01a24e79-9549-7449-b6cf-9a38cbd04f33", "null"},
		{"tenant.priority_classes_set", "tenants/globex", `"globex"`},
		{"gpu.registered", "devices/GPU-8f7c2a1e-5b3d-4c9e-a1f0-123456789abc/mig-1g.10gb-0", "null"}, // longer than SUBJECT
	}
	var connects atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if connects.Add(1) > 1 { // the reconnect after the last event: all are printed
			interrupt()
			<-r.Context().Done()
			return
		}
		fmt.Fprint(w, "retry: 10\nid: 00000000000000000000000000000000\n\n")
		for i, e := range events {
			fmt.Fprintf(w, "id: %032x\nevent: %s\ndata: {\"id\":\"00000000-0000-0000-0000-%012d\",\"type\":%q,\"tenantId\":%s,"+
				"\"subject\":%q,\"data\":{},\"time\":\"2030-01-01T00:00:00Z\"}\n\n", i+1, e.typ, i+1, e.typ, e.tenant, e.subject)
		}
	}))
	defer srv.Close()

	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_secret")
	var out, errOut bytes.Buffer
	c := newCLI(Program{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return inv.env[k] }})
	c.configPath = inv.configPath
	done := make(chan int, 1)
	go func() { done <- run(ctx, c, []string{"events", "tail", "--from-start"}) }()
	select {
	case code := <-done:
		require.Equal(t, 0, code, "an interrupted tail exits 0; stderr: %s", errOut.String())
	case <-time.After(time.Minute):
		t.Fatal("events tail did not end when interrupted")
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	require.Len(t, lines, 1+len(events), out.String())

	header := lines[0]
	starts := []int{0}
	for _, name := range []string{"TYPE", "SUBJECT", "TENANT", "CURSOR"} {
		starts = append(starts, strings.Index(header, " "+name)+1)
	}
	for i, row := range lines[1 : len(lines)-1] { // every row whose values fit
		for _, at := range starts[1:] {
			require.Equal(t, "  ", row[at-2:at], "row %d: a column starts under its header:\n%s\n%s", i, header, row)
			require.NotEqual(t, ' ', row[at], "row %d: a column starts under its header:\n%s\n%s", i, header, row)
		}
	}
	long := lines[len(lines)-1]
	require.Equal(t, starts[2], strings.Index(long, "devices/"), "an overlong subject starts under SUBJECT: %s", long)
	require.Equal(t, starts[4], strings.Index(long, fmt.Sprintf("%032x", len(events))), "CURSOR has room again after a short TENANT: %s", long)
}
