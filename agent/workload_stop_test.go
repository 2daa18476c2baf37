package agent

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A grace of 0 (a preempted reservation's class may ask for it) kills the
// workload right after its SIGTERM: a workload that traps TERM and keeps
// working gets no time to. (It once meant the daemon's default, 10 s.)
func TestStopGraceZeroKillsAtOnce(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	cmd := exec.Command("sh", "-c", `trap 'echo term >> "$0"' TERM; echo tick >> "$0"; echo ready; `+
		`while :; do echo tick >> "$0"; sleep 0.01; done`, log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line, "the trap is set and the log begun")
	ticks, ok := processStart(cmd.Process.Pid)
	require.True(t, ok)
	proc := &instanceProcess{id: "ins_grace0", pid: cmd.Process.Pid, startTicks: ticks, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(proc.done) }()

	stopGroup(proc, 0)

	b, err := os.ReadFile(log)
	require.NoError(t, err)
	// Killed so soon that its trap may not even have run ("term" absent).
	_, afterTerm, _ := strings.Cut(string(b), "term\n")
	require.Less(t, strings.Count(afterTerm, "tick"), 5, "the workload kept working after its SIGTERM:\n%s", b)
	require.Equal(t, syscall.SIGKILL, cmd.ProcessState.Sys().(syscall.WaitStatus).Signal(), "killed, not exited")
}
