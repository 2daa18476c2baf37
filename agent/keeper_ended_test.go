package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/wire"
)

// An instance the keeper ended while no daemon ran (its container ended at
// the keeper's deadline, past the window's end) is reported, when a daemon
// comes back, as what it was: stopped because its window ended, with the
// reason the watchdog gives for its own stop at the end, not as an instance
// that failed with exit status 137 (the SIGKILL the kernel deals every
// process of a PID namespace whose first process exits), as it was before.
func TestInstanceTheKeeperEndedIsReportedStoppedAtItsEnd(t *testing.T) {
	d, sb, _ := containerDaemon(t, time.Now)
	// A window that ends so that the keeper's deadline falls 2 s from now.
	a := assignOf("alc_keeperended", 1, 64)
	a.End = time.Now().Add(-sb.cfg.StopGrace - keeperSlack + 2*time.Second)
	a.Start = a.End.Add(-time.Hour)
	sb.forgetAtEnd(t, a)
	refused, err := d.journal.assign(*a)
	require.NoError(t, err)
	require.Nil(t, refused)
	const id = "ins_keeperended"
	state := orphanInstance(t, sb, a, id, "trap '' TERM; sleep 1000", false)
	// No daemon runs: the keeper ends the container at its deadline.
	require.Eventually(t, func() bool {
		return !cgroupHasProcesses(sb.cfg.CgroupRoot, sb.cgroupsPath(a.AllocationID))
	}, 2*time.Second+keeperPoll+10*time.Second, 10*time.Millisecond, "the keeper did not end the container")

	b, err := os.ReadFile(filepath.Join(state, registryFile))
	require.NoError(t, err)
	var rec map[string]registeredInstance
	require.NoError(t, json.Unmarshal(b, &rec))
	require.Eventually(t, func() bool {
		_, alive := processStart(rec[id].PID)
		return !alive
	}, 10*time.Second, 10*time.Millisecond, "the instance's process outlived its container")

	d.instances = instanceProcesses{now: d.now, exited: d.reportExited}
	adopted, err := d.instances.adopt(state)
	require.NoError(t, err)
	require.Empty(t, adopted)

	var stopped []wire.InstanceStopped
	for _, m := range firstSession(t, d) {
		if m.Type == wire.TypeInstanceStopped {
			var p wire.InstanceStopped
			require.NoError(t, json.Unmarshal(m.Payload, &p))
			stopped = append(stopped, p)
		}
	}
	require.Len(t, stopped, 1)
	require.Equal(t, id, stopped[0].InstanceID)
	require.False(t, stopped[0].Exited, "reported as an exit of its own: %q", stopped[0].Reason)
	require.Nil(t, stopped[0].ExitCode)
	require.Equal(t, outsideWindow(*a, time.Now()), stopped[0].Reason)
}

// An instance SIGKILLed in the middle of its window, while no daemon ran,
// is reported as the exit it was (status 137, failed), even with its
// container gone and the node's boot clock past a keeper deadline written
// before a reboot (the boot clock starts again at 0): the deadline's boot
// id is not this boot's.
func TestInstanceKilledMidWindowIsReportedAsItsExit(t *testing.T) {
	d, sb, _ := containerDaemon(t, time.Now)
	a := assignOf("alc_killedmid", 1, 64)
	a.Start, a.End = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	sb.forgetAtEnd(t, a)
	refused, err := d.journal.assign(*a)
	require.NoError(t, err)
	require.Nil(t, refused)
	const id = "ins_killedmid"
	state := orphanInstance(t, sb, a, id, "kill -KILL $$", false)
	b, err := os.ReadFile(filepath.Join(state, registryFile))
	require.NoError(t, err)
	var rec map[string]registeredInstance
	require.NoError(t, json.Unmarshal(b, &rec))
	require.Eventually(t, func() bool {
		_, alive := processStart(rec[id].PID)
		return !alive
	}, 10*time.Second, 10*time.Millisecond, "the instance's process never exited")
	require.NoError(t, sb.stop(context.Background(), a.AllocationID)) // a reboot leaves no container
	// Written at the end of the boot before, as 1 s of this boot's clock.
	require.NoError(t, os.WriteFile(filepath.Join(sb.keeperHostDir(a.AllocationID), keeperBootDeadline),
		[]byte("1 0d1e5b9a-2c1f-4a43-9d0e-6f7b3c2a1e55"), 0o644))

	d.instances = instanceProcesses{now: d.now, exited: d.reportExited}
	adopted, err := d.instances.adopt(state)
	require.NoError(t, err)
	require.Empty(t, adopted)
	var stopped []wire.InstanceStopped
	for _, m := range firstSession(t, d) {
		if m.Type == wire.TypeInstanceStopped {
			var p wire.InstanceStopped
			require.NoError(t, json.Unmarshal(m.Payload, &p))
			stopped = append(stopped, p)
		}
	}
	require.Len(t, stopped, 1)
	require.True(t, stopped[0].Exited, "reported as a stop: %q", stopped[0].Reason)
	require.NotNil(t, stopped[0].ExitCode)
	require.Equal(t, killedStatus, *stopped[0].ExitCode)
}
