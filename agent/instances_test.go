package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/workqueue"
)

func (hs *harness) instance(id string) core.Instance {
	hs.t.Helper()
	i, err := (commands.New(hs.d.Pool, commands.Config{})).GetInstance(hs.ctx, operator, id)
	require.NoError(hs.t, err)
	return i
}

func (hs *harness) awaitInstance(id string, want core.State) core.Instance {
	hs.t.Helper()
	require.Eventually(hs.t, func() bool { return hs.instance(id).State == want }, 10*time.Second, 5*time.Millisecond,
		"instance %s never became %s (is %s)", id, want, hs.instance(id).State)
	return hs.instance(id)
}

func (hs *harness) instanceEvents(id string) []string {
	hs.t.Helper()
	rows, err := hs.d.Pool.Query(hs.ctx, "SELECT type FROM outbox WHERE subject = $1 AND tenant_id = 'acme' ORDER BY seq",
		core.InstanceSubject(id))
	require.NoError(hs.t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ string
		require.NoError(hs.t, rows.Scan(&typ))
		out = append(out, typ)
	}
	require.NoError(hs.t, rows.Err())
	return out
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// An instance on a booked reservation really starts (a process on the
// node) and really stops, through the provision state table, each step an
// event; a repeated delete changes nothing.
func TestInstanceLifecycle(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	g, url := hs.gateway("gw1")
	router := hs.router(g)
	dir := t.TempDir()
	hs.daemon("n1", dir, url)
	hs.eventually("n1", core.NodeConnected)
	rsv := hs.book("n1")
	h := commands.New(hs.d.Pool, commands.Config{})

	created, err := h.CreateInstance(hs.ctx, tenant, commands.CreateInstance{ReservationID: rsv,
		Spec: core.InstanceSpec{Image: "pytorch:2", Command: `echo $$ > pid; exec sleep 86400`}, IdempotencyKey: "i1"})
	require.NoError(t, err)
	id := created.Instance.ID
	require.Equal(t, core.ProvisionRequested, created.Instance.State)
	again, err := h.CreateInstance(hs.ctx, tenant, commands.CreateInstance{ReservationID: rsv,
		Spec: core.InstanceSpec{Image: "pytorch:2", Command: `echo $$ > pid; exec sleep 86400`}, IdempotencyKey: "i1"})
	require.NoError(t, err)
	require.Equal(t, id, again.Instance.ID, "same Idempotency-Key, one instance")
	_, err = h.GetInstance(hs.ctx, core.Actor{Tenant: "globex", Identity: "x@globex", Role: core.RoleMember}, id)
	require.Equal(t, core.CodeNotFound, core.CodeOf(err))

	require.NoError(t, router.HandleDispatch(hs.ctx, workqueue.Item{Kind: commands.KindNodeJobDispatch, Key: "n1"}))
	hs.awaitInstance(id, core.ProvisionRunning)
	pidFile := filepath.Join(hs.workloads, "n1", created.Instance.AllocationID, "work", "instances", id, "pid")
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}, 10*time.Second, 5*time.Millisecond)
	require.True(t, alive(pid), "the workload runs on the node")

	stopping, err := h.DeleteInstance(hs.ctx, tenant, id)
	require.NoError(t, err)
	require.Equal(t, core.ProvisionStopping, stopping.Instance.State)
	require.NoError(t, g.DispatchPending(hs.ctx))
	stopped := hs.awaitInstance(id, core.ProvisionStopped)
	require.False(t, alive(pid), "the workload is gone")
	require.Equal(t, int64(5), stopped.Version)
	require.Equal(t, []string{core.EventInstanceRequested, core.EventInstanceProvisioning, core.EventInstanceRunning,
		core.EventInstanceStopping, core.EventInstanceStopped}, hs.instanceEvents(id))

	repeat, err := h.DeleteInstance(hs.ctx, tenant, id)
	require.NoError(t, err)
	require.Equal(t, core.ProvisionStopped, repeat.Instance.State)
	require.Equal(t, stopped.Version, repeat.Instance.Version)
	require.True(t, repeat.Position.IsZero())
	require.True(t, errors.Is(syscall.Kill(pid, 0), syscall.ESRCH))
}
