package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/wire"
)

// A stopped workload gets its SIGTERM once. A workload that traps TERM to
// checkpoint (what a preempted class's grace is for) must run its handler
// once: the demo's trap ran twice, 40 to 80 ms apart, in two stops of
// three, because the daemon signalled both the runc exec process group
// (runc forwards the signal to the workload) and every process of the
// workload's cgroup, the workload's own process among them. Ten stops,
// one "term" each.
func TestStoppedWorkloadGetsOneSIGTERM(t *testing.T) {
	now := time.Now()
	d, sb, j := containerDaemon(t, func() time.Time { return now })
	a := assignment("alc_term", now.Add(-time.Hour), now.Add(time.Hour), 1, gpu(sb.devices.gpus[0].UUID))
	refused, err := j.assign(a)
	require.NoError(t, err)
	require.Nil(t, refused)
	sb.forgetAtEnd(t, &a)
	for n := range 10 {
		id := fmt.Sprintf("ins_term%d", n)
		dir := filepath.Join(sb.domainDir(a.AllocationID), "work", "instances", id)
		res := d.instances.start(context.Background(), sb, j.assignment, wire.Message{}, a.AllocationID,
			commandPayload{InstanceID: id, Script: `trap 'echo term >> t' TERM; echo ready > r; while :; do sleep 0.05; done`})
		require.Empty(t, res.Reason)
		require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(dir, "r")); return err == nil },
			10*time.Second, 10*time.Millisecond)

		res = d.instances.stop(wire.Message{}, commandPayload{InstanceID: id}, 500*time.Millisecond)
		require.Equal(t, "instance "+id+" stopped", res.Output)
		b, err := os.ReadFile(filepath.Join(dir, "t"))
		require.NoError(t, err, "the workload never got its SIGTERM")
		require.Equal(t, 1, strings.Count(string(b), "term"), "stop %d: the workload's TERM handler ran %d times", n,
			strings.Count(string(b), "term"))
	}
}
