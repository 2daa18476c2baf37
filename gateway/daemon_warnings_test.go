package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/wire"
)

// logRecords keeps what a gateway logs.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecords) WithGroup(string) slog.Handler            { return l }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}

// lines are the records logged with msg, each as its attributes.
func (l *logRecords) lines(msg string) []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]string
	for _, r := range l.recs {
		if r.Message != msg {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		out = append(out, attrs)
	}
	return out
}

// A daemon that floods the gateway with reports it will not take (results
// of jobs it does not have, one of them naming a 1 MiB id) gets its
// warnings logged within a budget: 20 lines in a row, then one a second
// that says how many were left out, each line short. Every refused report
// was a line of its own before, carrying the daemon's id whole, so one
// stolen credential wrote thousands of lines a second, megabytes each.
func TestRefusedReportsAreLoggedWithinABudget(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	logs := &logRecords{}
	var clock sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	handled := make(chan struct{}, 256)
	g := &gateway.Gateway{ID: "gw1", Owner: "gw1-process", Commands: f.s, Logger: slog.New(logs),
		Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now },
		OnMessage: func(_ string, _ int64, m wire.Message) {
			if m.Type == wire.TypeCommandResult || m.Type == "bogus" {
				handled <- struct{}{}
			}
		}}
	require.NoError(t, g.Renew(f.ctx))
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	d, _ := f.wireDaemon("ws://"+strings.TrimPrefix(srv.URL, "http://")+wire.Path, cred.Token)
	wait := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-handled:
			case <-time.After(10 * time.Second):
				t.Fatal("the gateway did not handle the reports")
			}
		}
	}

	d.send(wire.Message{Type: wire.TypeCommandResult, CommandID: "cmd_" + strings.Repeat("x", 1<<20), State: "succeeded"})
	d.send(wire.Message{Type: wire.TypeCommandResult, CommandID: "cmd_\x00", State: "succeeded"})
	for i := range 98 {
		d.send(wire.Message{Type: wire.TypeCommandResult, CommandID: fmt.Sprintf("cmd_nope-%d", i), State: "succeeded"})
	}
	wait(100)
	lines := logs.lines("node job result")
	require.Len(t, lines, 20, "a burst of warnings, then none")
	for _, l := range lines {
		require.Equal(t, "n1", l["node"])
		require.Less(t, len(l["command"])+len(l["err"]), 1024, "the daemon's id is not logged whole")
	}

	clock.Lock()
	now = now.Add(time.Second)
	clock.Unlock()
	d.send(wire.Message{Type: wire.TypeCommandResult, CommandID: "cmd_nope-last", State: "succeeded"})
	wait(1)
	lines = logs.lines("node job result")
	require.Len(t, lines, 21, "one more a second")
	require.Equal(t, "80", lines[20]["suppressed"], "saying how many were left out")

	// A message of a type no daemon sends is ignored, with a line too.
	clock.Lock()
	now = now.Add(time.Second)
	clock.Unlock()
	d.send(wire.Message{Type: "bogus"})
	wait(1)
	ignored := logs.lines("daemon message ignored: not one a daemon sends on an open session")
	require.Len(t, ignored, 1)
	require.Equal(t, "bogus", ignored[0]["type"])
	f.requireInvariants()
}
