package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/wire"
)

// An instance whose process exits is still listed in the daemon's
// inventory until its end has been reported, whether the daemon started it
// or adopted it: an inventory taken in between (the periodic one, or a
// session's first) that no longer listed it would make the control plane
// end it `lost` before the report that ends it with its exit status
// arrived. The report is made while the inventory still lists it, and it
// is forgotten after.
func TestAnExitedInstanceIsListedUntilItsEndIsReported(t *testing.T) {
	now := time.Now()
	d, sb, j := containerDaemon(t, func() time.Time { return now })
	a := assignment("alc_order", now.Add(-time.Hour), now.Add(time.Hour), 1, gpu(sb.devices.gpus[0].UUID))
	refused, err := j.assign(a)
	require.NoError(t, err)
	require.Nil(t, refused)
	sb.forgetAtEnd(t, &a)
	type report struct {
		id     string
		listed []wire.RunningInstance
	}
	reports := make(chan report, 1)
	d.instances.exited = func(proc *instanceProcess, _ *int32, _ string) {
		reports <- report{proc.id, d.nodeState().Instances} // the inventory taken as it is reported
	}
	listedAtItsReport := func(id string) {
		t.Helper()
		select {
		case r := <-reports:
			require.Equal(t, id, r.id)
			require.True(t, slices.ContainsFunc(r.listed, func(x wire.RunningInstance) bool { return x.InstanceID == id }),
				"%s: the inventory no longer lists it when its end is reported: %v", id, r.listed)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: its end was never reported", id)
		}
		require.Eventually(t, func() bool { return len(d.instances.running()) == 0 }, 10*time.Second, 10*time.Millisecond,
			"%s: still listed once its end was reported", id)
	}

	// Started by the daemon.
	res := d.instances.start(context.Background(), sb, j.assignment, wire.Message{}, a.AllocationID,
		commandPayload{InstanceID: "ins_ordstart", Script: "until [ -e /work/end ]; do sleep 0.05; done; exit 3"})
	require.Empty(t, res.Reason)
	require.NoError(t, os.WriteFile(filepath.Join(sb.workDir(a.AllocationID), "end"), nil, 0o644))
	listedAtItsReport("ins_ordstart")
	require.NoError(t, os.Remove(filepath.Join(sb.workDir(a.AllocationID), "end")))

	// Adopted from a daemon that was killed.
	state := orphanInstance(t, sb, &a, "ins_ordadopt", "until [ -e /work/end ]; do sleep 0.05; done; exit 3", false)
	adopted, err := d.instances.adopt(state)
	require.NoError(t, err)
	require.Equal(t, []string{"ins_ordadopt"}, adopted)
	require.NoError(t, os.WriteFile(filepath.Join(sb.workDir(a.AllocationID), "end"), nil, 0o644))
	listedAtItsReport("ins_ordadopt")
}
