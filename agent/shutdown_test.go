package agent_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/workqueue"
)

// startInstance creates an instance of command on the reservation,
// dispatches its start to the node and returns its id and its directory
// on the node (where command runs).
func (hs *harness) startInstance(router *gateway.NodeJobRouter, node, rsv, key, command string) (string, string) {
	hs.t.Helper()
	created, err := commands.New(hs.d.Pool, commands.Config{}).CreateInstance(hs.ctx, tenant, commands.CreateInstance{
		ReservationID: rsv, Spec: core.InstanceSpec{Image: "pytorch:2", Command: command}, IdempotencyKey: key})
	require.NoError(hs.t, err)
	require.NoError(hs.t, router.HandleDispatch(hs.ctx, workqueue.Item{Kind: commands.KindNodeJobDispatch, Key: node}))
	return created.Instance.ID, filepath.Join(hs.workloads, node, created.Instance.AllocationID, "work", "instances",
		created.Instance.ID)
}

// pidIn waits for the pid an instance's command wrote to dir/pid.
func (hs *harness) pidIn(dir string) int {
	hs.t.Helper()
	var pid int
	require.Eventually(hs.t, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}, 10*time.Second, 5*time.Millisecond)
	return pid
}

// A daemon stopped gracefully (SIGTERM, systemctl stop) gives its
// instances what any stop gives them: SIGTERM, then the grace period
// before the kill. They used to be killed at once, with the daemon's
// context, before its shutdown sent the SIGTERM: a workload that saves
// its state on SIGTERM lost it at every restart of the daemon.
func TestStoppedDaemonGivesItsInstancesTheirGrace(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	g, url := hs.gateway("gw1")
	router := hs.router(g)
	stop := hs.daemon("n1", t.TempDir(), url)
	hs.eventually("n1", core.NodeConnected)
	rsv := hs.book("n1")
	id, dir := hs.startInstance(router, "n1", rsv, "i1",
		`trap 'echo saved > checkpoint; exit 0' TERM; echo $$ > pid; while :; do sleep 0.05; done`)
	hs.awaitInstance(id, core.ProvisionRunning)
	pid := hs.pidIn(dir)

	stop()
	require.FileExists(t, filepath.Join(dir, "checkpoint"), "the workload had its SIGTERM")
	require.False(t, alive(pid), "a stopped daemon leaves nothing running")
}

// A daemon stopped gracefully (SIGTERM, systemctl stop) stops its
// workloads and says so on its session before it closes it: the instance
// is stopped, with the daemon's reason, by the time the daemon has exited.
// It used to report nothing (its session was closed before the stops), so
// the API showed the instance running for as long as the daemon was down,
// and failed ("lost: … did not report how it ended") when it came back.
func TestStoppedDaemonReportsTheInstancesItStopped(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	g, url := hs.gateway("gw1")
	router := hs.router(g)
	stop := hs.daemon("n1", t.TempDir(), url)
	hs.eventually("n1", core.NodeConnected)
	rsv := hs.book("n1")
	id, dir := hs.startInstance(router, "n1", rsv, "i1", `echo $$ > pid; exec sleep 600`)
	hs.awaitInstance(id, core.ProvisionRunning)
	pid := hs.pidIn(dir)

	stop()
	require.False(t, alive(pid), "a stopped daemon leaves nothing running")
	i := hs.instance(id)
	require.Equal(t, core.ProvisionStopped, i.State, "reason: %s", i.Reason)
	require.Equal(t, "the node daemon stopped", i.Reason)
	require.Equal(t, []string{core.EventInstanceRequested, core.EventInstanceProvisioning, core.EventInstanceRunning,
		core.EventInstanceStopping, core.EventInstanceStopped}, hs.instanceEvents(id))
}

// An instance start that reaches a daemon while it stops its workloads
// (its session is still open for their reports) is refused: the promise of
// a graceful stop is that nothing the daemon started runs after it exits.
func TestInstanceStartDuringDaemonShutdownIsRefused(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	g, url := hs.gateway("gw1")
	router := hs.router(g)
	stop := hs.daemonWith("n1", t.TempDir(), func(c *agent.Config) { c.StopGrace = time.Minute }, url)
	hs.eventually("n1", core.NodeConnected)
	rsv := hs.book("n1")
	// The first instance holds the shutdown open: it takes SIGTERM, says
	// so, and exits only when the test lets it.
	first, dir := hs.startInstance(router, "n1", rsv, "i1",
		`trap 'touch terminated; while [ ! -e release ]; do sleep 0.05; done; exit 0' TERM; echo $$ > pid; `+
			`while :; do sleep 0.05; done`)
	hs.awaitInstance(first, core.ProvisionRunning)
	hs.pidIn(dir)

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		stop()
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(dir, "terminated")); return err == nil },
		10*time.Second, 5*time.Millisecond, "the daemon began its shutdown")

	second, secondDir := hs.startInstance(router, "n1", rsv, "i2", `echo $$ > pid; exec sleep 600`)
	t.Cleanup(func() { // what a failure of this test would leave behind
		if b, err := os.ReadFile(filepath.Join(secondDir, "pid")); err == nil {
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	refused := hs.awaitInstance(second, core.ProvisionFailed)
	require.Contains(t, refused.Reason, "the node daemon is stopping")
	require.NoFileExists(t, filepath.Join(secondDir, "pid"), "it never ran")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "release"), nil, 0o600))
	<-stopped
	require.NoFileExists(t, filepath.Join(secondDir, "pid"), "nothing ran after the daemon exited")
	require.Equal(t, core.ProvisionStopped, hs.instance(first).State)
}
