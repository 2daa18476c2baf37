package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/wire"
)

// An instance's end that its daemon reported while no session was open is
// not lost with the daemon: killed before any session opened (twice, for
// one that ended while no daemon ran: the daemon that found it ended is
// killed too), the daemon that comes back reports it, with its exit
// status, on its first session before its inventory, and the control
// plane ends the instance `failed` with "exit status 3", not `lost`. Sent,
// it is not sent again by the daemon after.
func TestAnEndReportedWithoutASessionOutlivesTheDaemon(t *testing.T) {
	for _, c := range []struct {
		name string
		// end has instance id of allocation a end with exit 3 while d runs
		// without a session, and returns once d has reported it.
		end func(t *testing.T, d *daemon, sb *sandbox, a *wire.AssignPayload, id string)
	}{
		{"started", func(t *testing.T, d *daemon, sb *sandbox, a *wire.AssignPayload, id string) {
			_, err := d.restore()
			require.NoError(t, err)
			res := d.instances.start(context.Background(), sb, d.journal.assignment, wire.Message{}, a.AllocationID,
				commandPayload{InstanceID: id, Script: "exit 3"})
			require.Empty(t, res.Reason)
			require.Eventually(t, func() bool { return len(d.instances.running()) == 0 && unsentCount(d) == 1 },
				20*time.Second, 10*time.Millisecond, "its end was never reported")
		}},
		{"ended-away", func(t *testing.T, d *daemon, sb *sandbox, a *wire.AssignPayload, id string) {
			state := orphanInstance(t, sb, a, id, "until [ -e /work/end ]; do sleep 0.05; done; exit 3", false)
			b, err := os.ReadFile(filepath.Join(state, registryFile))
			require.NoError(t, err)
			var rec map[string]registeredInstance
			require.NoError(t, json.Unmarshal(b, &rec))
			require.NoError(t, os.WriteFile(filepath.Join(sb.workDir(a.AllocationID), "end"), nil, 0o644))
			require.Eventually(t, func() bool {
				_, alive := processStart(rec[id].PID)
				return !alive
			}, 20*time.Second, 10*time.Millisecond, "the orphan's process never exited")
			d.cfg.StateDir = state
			adopted, err := d.restore()
			require.NoError(t, err)
			require.Empty(t, adopted)
			require.Equal(t, 1, unsentCount(d))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, sb, _ := containerDaemon(t, time.Now)
			a := assignOf("alc_unsent", 1, 64)
			a.Start, a.End = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
			sb.forgetAtEnd(t, a)
			refused, err := d.journal.assign(*a)
			require.NoError(t, err)
			require.Nil(t, refused)
			d.instances.exited = d.reportExited
			c.end(t, d, sb, a, "ins_unsent")

			// d is killed before any session opened; its successor opens one.
			next := successor(t, d)
			stopped, inventory := firstReports(t, next)
			require.Len(t, stopped, 1, "its end is reported on the successor's first session")
			require.Equal(t, "ins_unsent", stopped[0].InstanceID)
			require.True(t, stopped[0].Exited)
			require.NotNil(t, stopped[0].ExitCode, "reported without its status")
			require.Equal(t, int32(3), *stopped[0].ExitCode)
			require.Equal(t, "exit status 3", stopped[0].Reason)
			require.Empty(t, inventory.Instances)

			// Sent: the daemon after does not send it again.
			again, _ := firstReports(t, successor(t, next))
			require.Empty(t, again, "an end already sent is sent again")
		})
	}
}

// unsentCount is how many reports d keeps for its next session.
func unsentCount(d *daemon) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.unsent)
}

// successor is the daemon that comes back after d was killed: the same
// state directory, journal and sandbox, nothing of d's memory; restored as
// Run restores it.
func successor(t *testing.T, d *daemon) *daemon {
	t.Helper()
	next := &daemon{cfg: d.cfg, journal: d.journal, log: d.log, sandbox: d.sandbox, gpus: d.gpus, now: d.now}
	next.instances.now = next.windowNow
	next.instances.exited = next.reportExited
	next.instances.log = d.log
	_, err := next.restore()
	require.NoError(t, err)
	return next
}

// firstReports are the instances' ends d reports on its first session,
// each checked to come before its inventory, and that inventory.
func firstReports(t *testing.T, d *daemon) ([]wire.InstanceStopped, wire.NodeState) {
	t.Helper()
	var stopped []wire.InstanceStopped
	var inventory *wire.NodeState
	for _, m := range firstSession(t, d) {
		switch m.Type {
		case wire.TypeInstanceStopped:
			require.Nil(t, inventory, "an instance's end is reported after the inventory")
			var p wire.InstanceStopped
			require.NoError(t, json.Unmarshal(m.Payload, &p))
			stopped = append(stopped, p)
		case wire.TypeInventory:
			inventory = &wire.NodeState{}
			require.NoError(t, json.Unmarshal(m.Payload, inventory))
		}
	}
	require.NotNil(t, inventory, fmt.Sprintf("no inventory among %d messages", len(stopped)))
	return stopped, *inventory
}
