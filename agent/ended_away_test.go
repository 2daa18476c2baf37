package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/wire"
)

// An instance whose process exits while no daemon runs (killed, and not
// restarted yet: an upgrade) ends with its exit status, not as lost: the
// daemon that comes back finds its process gone at adoption and reports
// its end, with the status its shell wrote to its exit file, on its first
// session before the inventory that no longer lists it (the control plane
// ends an unlisted instance `lost` at once). Exit 3 is reported as exit
// status 3 (the control plane: failed, "exit status 3"), exit 0 as 0
// (succeeded). Its exit file and its workload's cgroup are gone.
func TestInstanceThatExitedWhileNoDaemonRanIsReported(t *testing.T) {
	d, sb, _ := containerDaemon(t, time.Now)
	for i, code := range []int32{3, 0} {
		a := assignOf(fmt.Sprintf("alc_endedaway%d", i), 1, 64)
		a.Start, a.End = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		sb.forgetAtEnd(t, a)
		// Assigned here: the session's watchdog leaves its container be.
		refused, err := d.journal.assign(*a)
		require.NoError(t, err)
		require.Nil(t, refused)
		id := fmt.Sprintf("ins_away%d", i)
		state := orphanInstance(t, sb, a, id, fmt.Sprintf("until [ -e /work/end ]; do sleep 0.05; done; exit %d", code), false)
		b, err := os.ReadFile(filepath.Join(state, registryFile))
		require.NoError(t, err)
		var rec map[string]registeredInstance
		require.NoError(t, json.Unmarshal(b, &rec))
		r := rec[id]
		// It exits while no daemon runs.
		require.NoError(t, os.WriteFile(filepath.Join(sb.workDir(a.AllocationID), "end"), nil, 0o644))
		require.Eventually(t, func() bool {
			_, alive := processStart(r.PID)
			return !alive
		}, 20*time.Second, 10*time.Millisecond, "the orphan's process never exited")

		d.instances = instanceProcesses{now: d.now, exited: d.reportExited}
		adopted, err := d.instances.adopt(state)
		require.NoError(t, err)
		require.Empty(t, adopted)
		require.Empty(t, d.instances.running())

		msgs := firstSession(t, d)
		var stopped []wire.InstanceStopped
		var inventory *wire.NodeState
		for _, m := range msgs {
			switch m.Type {
			case wire.TypeInstanceStopped:
				require.Nil(t, inventory, "exit %d: an instance's end is reported after the inventory", code)
				var p wire.InstanceStopped
				require.NoError(t, json.Unmarshal(m.Payload, &p))
				stopped = append(stopped, p)
			case wire.TypeInventory:
				inventory = &wire.NodeState{}
				require.NoError(t, json.Unmarshal(m.Payload, inventory))
			}
		}
		require.Len(t, stopped, 1, "exit %d: its end is reported on the first session", code)
		require.Equal(t, id, stopped[0].InstanceID)
		require.Equal(t, a.AllocationID, stopped[0].AllocationID)
		require.True(t, stopped[0].Exited)
		require.NotNil(t, stopped[0].ExitCode, "exit %d: reported without its status", code)
		require.Equal(t, code, *stopped[0].ExitCode)
		require.Equal(t, exitReason(code, false), stopped[0].Reason)
		require.NotNil(t, inventory)
		require.Empty(t, inventory.Instances)

		_, err = os.Stat(r.ExitFile)
		require.ErrorIs(t, err, os.ErrNotExist, "its exit file is removed")
		_, err = os.Stat(workloadCgroup{root: r.GroupRoot, path: r.GroupPath, v2: cgroupV2(r.GroupRoot)}.dir())
		require.ErrorIs(t, err, os.ErrNotExist, "its workload's cgroup is removed")
		b, err = os.ReadFile(filepath.Join(state, registryFile))
		require.NoError(t, err)
		require.JSONEq(t, `{}`, string(b))
	}
}

// firstSession runs one session of d against a gateway that welcomes it
// and returns what the daemon sent after its hello, up to and including
// its inventory.
func firstSession(t *testing.T, d *daemon) []wire.Message {
	t.Helper()
	got := make(chan []wire.Message, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx := r.Context()
		if _, err := receive(ctx, ws); err != nil { // hello
			return
		}
		b, _ := json.Marshal(wire.Message{Type: wire.TypeWelcome, NodeID: "n1", SessionEpoch: 1})
		if ws.Write(ctx, websocket.MessageText, b) != nil {
			return
		}
		var msgs []wire.Message
		for {
			m, err := receive(ctx, ws)
			if err != nil {
				return
			}
			msgs = append(msgs, m)
			if m.Type == wire.TypeInventory {
				got <- msgs
				<-ctx.Done()
				return
			}
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = d.session(ctx, ctx, "ws://"+strings.TrimPrefix(srv.URL, "http://"))
	}()
	defer func() { cancel(); <-ended }()
	select {
	case msgs := <-got:
		return msgs
	case <-time.After(20 * time.Second):
		t.Fatal("the daemon sent no inventory")
		return nil
	}
}
