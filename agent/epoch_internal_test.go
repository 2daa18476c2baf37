package agent

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

	"github.com/bettercompute/compute/wire"
)

// The daemon refuses a node job stamped with any session epoch but its
// current one (a zombie gateway's send after its session was superseded):
// it neither runs nor journals it, nor answers it. The job stamped with the
// current epoch runs.
func TestDaemonRefusesStaleEpoch(t *testing.T) {
	t.Parallel()
	td := newTestDaemon(t)
	const epoch = 7
	fromDaemon := make(chan wire.Message, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx := r.Context()
		write := func(m wire.Message) error {
			b, err := json.Marshal(m)
			if err != nil {
				return err
			}
			return ws.Write(ctx, websocket.MessageText, b)
		}
		if _, err := receive(ctx, ws); err != nil { // hello
			return
		}
		if write(wire.Message{Type: wire.TypeWelcome, NodeID: "n1", SessionEpoch: epoch}) != nil {
			return
		}
		for _, m := range []wire.Message{
			{Type: wire.TypeCommand, CommandID: "cmd_stale", CommandKind: "wipe", SessionEpoch: epoch - 1},
			{Type: wire.TypeCommand, CommandID: "cmd_unstamped", CommandKind: "wipe"},
			{Type: wire.TypeCommand, CommandID: "cmd_current", CommandKind: "wipe", SessionEpoch: epoch},
		} {
			if write(m) != nil {
				return
			}
		}
		for {
			m, err := receive(ctx, ws)
			if err != nil {
				return
			}
			fromDaemon <- m
		}
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(td.ctx)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = td.session(ctx, ctx, "ws://"+strings.TrimPrefix(srv.URL, "http://"))
	}()
	t.Cleanup(func() { cancel(); <-ended })

	// Any result counts as an answer: a job the daemon takes is reported
	// running before the session reads the next message, so the refused
	// ones, sent first, would be answered before the current one finishes.
	answered := map[string]bool{}
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case m := <-fromDaemon:
			if m.Type == wire.TypeCommandResult {
				answered[m.CommandID] = true
				done = m.CommandID == "cmd_current" && m.State == outcomeSucceeded
			}
		case <-deadline:
			t.Fatal("the command at the current epoch never finished")
		}
	}
	require.Equal(t, map[string]bool{"cmd_current": true}, answered)
	for _, id := range []string{"cmd_stale", "cmd_unstamped"} {
		_, journaled := td.journal.commandEntry(id)
		require.False(t, journaled, "%s is not in the journal", id)
	}
	_, journaled := td.journal.commandEntry("cmd_current")
	require.True(t, journaled)
}
