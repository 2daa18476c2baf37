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

// An instance ends when its process exits, with that process's exit
// status, even when it left a background process holding its output open:
// `runc exec` waits for its output pipes to close, which the leftover
// process, not the instance's own, decides. The leftover goes with the
// instance, as it does when its output went elsewhere.
func TestInstanceEndsWhenABackgroundChildKeepsItsOutput(t *testing.T) {
	now := time.Now()
	d, sb, j := containerDaemon(t, func() time.Time { return now })
	a := assignment("alc_bgout", now.Add(-time.Hour), now.Add(time.Hour), 1, gpu(sb.devices.gpus[0].UUID))
	refused, err := j.assign(a)
	require.NoError(t, err)
	require.Nil(t, refused)
	sb.forgetAtEnd(t, &a)
	type ending struct {
		id     string
		code   int32
		reason string
	}
	exited := make(chan ending, 2)
	d.instances.exited = func(proc *instanceProcess, code *int32, reason string) { exited <- ending{proc.id, *code, reason} }
	for i, script := range []string{"setsid sleep 9997 & exit 3", "sleep 9996 & exit 3"} {
		id := fmt.Sprintf("ins_bg%d", i)
		res := d.instances.start(context.Background(), sb, j.assignment, wire.Message{}, a.AllocationID,
			commandPayload{InstanceID: id, Script: script})
		require.Empty(t, res.Reason)
		select {
		case e := <-exited:
			require.Equal(t, ending{id, 3, "exit status 3"}, e, script)
		case <-time.After(20 * time.Second):
			t.Fatalf("instance %q never ended", script)
		}
		require.False(t, hostHas(fmt.Sprintf("sleep %d", 9997-i)), "the background process outlived its instance")
		// Forgotten once its end was reported (endReported).
		require.Eventually(t, func() bool { return len(d.instances.running()) == 0 }, 10*time.Second, 10*time.Millisecond)
	}
}

// So does an instance a restarted daemon adopted: its `runc exec`, left
// running by the daemon before, waits on the leftover just the same.
func TestAdoptedInstanceEndsWhenABackgroundChildKeepsItsOutput(t *testing.T) {
	now := time.Now()
	_, sb, _ := containerDaemon(t, func() time.Time { return now })
	a := assignOf("alc_bgadopt", 1, 128)
	sb.forgetAtEnd(t, a)
	// What a daemon that was killed left: a runc exec of the instance, and
	// its record.
	w, err := sb.workload(context.Background(), a, "setsid sleep 9995 & exit 3", "instances/ins_bga")
	require.NoError(t, err)
	require.NoError(t, w.cmd.Start())
	returned := make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(returned) }() // reaps it, as init would
	t.Cleanup(func() { w.kill(); <-returned; w.done() })
	ticks, ok := processStart(w.cmd.Process.Pid)
	require.True(t, ok)
	state := t.TempDir()
	rec := map[string]registeredInstance{"ins_bga": {AllocationID: a.AllocationID, PID: w.cmd.Process.Pid,
		StartTicks: ticks, PIDFile: w.pidFile, Cgroup: w.cgroup, GroupRoot: w.group.root, GroupPath: w.group.path}}
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(state, registryFile), b, 0o600))

	// Its end is reported before it is forgotten (endReported): wait for
	// the report, not on ip.procs, which the end changes meanwhile.
	ended := make(chan string, 1)
	ip := instanceProcesses{exited: func(p *instanceProcess, _ *int32, _ string) { ended <- p.id }}
	adopted, err := ip.adopt(state)
	require.NoError(t, err)
	require.Equal(t, []string{"ins_bga"}, adopted)
	select {
	case id := <-ended:
		require.Equal(t, "ins_bga", id)
	case <-time.After(20 * time.Second):
		t.Fatal("the adopted instance never ended")
	}
	require.False(t, hostHas("sleep 9995"), "the background process outlived its instance")
	<-returned
	require.Equal(t, 3, w.cmd.ProcessState.ExitCode(), "runc returns the instance's own exit status")
}
