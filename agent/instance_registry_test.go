package agent

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A daemon that was killed leaves its instances running; its successor
// adopts the ones recorded in the state directory (and only those whose
// pid still belongs to the recorded process) and stops them like its own.
func TestRestartedDaemonAdoptsAndStopsOrphanedInstances(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	orphan := exec.Command("sleep", "600")
	orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, orphan.Start())
	exited := make(chan struct{})
	go func() { _ = orphan.Wait(); close(exited) }() // reaps it, as init would
	t.Cleanup(func() { _ = syscall.Kill(-orphan.Process.Pid, syscall.SIGKILL) })
	ticks, ok := processStart(orphan.Process.Pid)
	require.True(t, ok)

	rec := map[string]registeredInstance{
		"ins_orphan": {AllocationID: "alc_ended", PID: orphan.Process.Pid, StartTicks: ticks},
		"ins_reused": {AllocationID: "alc_other", PID: os.Getpid(), StartTicks: ticks + 12345}, // pid now someone else's
		"ins_gone":   {AllocationID: "alc_other", PID: 1 << 22, StartTicks: 1},
	}
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(state, registryFile), b, 0o600))

	var ip instanceProcesses
	adopted, err := ip.adopt(state)
	require.NoError(t, err)
	require.Equal(t, []string{"ins_orphan"}, adopted)
	require.Len(t, ip.running(), 1)

	stopped := ip.stopWhere(time.Second, false, func(_, alloc string) string {
		if alloc == "alc_ended" {
			return "allocation alc_ended is not assigned to this node"
		}
		return ""
	})
	require.Len(t, stopped, 1)
	require.Equal(t, "ins_orphan", stopped[0].InstanceID)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the adopted instance still runs")
	}
	require.Empty(t, ip.running())
	b, err = os.ReadFile(filepath.Join(state, registryFile))
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(b), "the record forgets stopped instances")
}
