package agent_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
