package agent_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/workqueue"
)

// A joined node's daemon restarted with --vcpu 4 --memory-mb 4096 (after
// joining with 32 vCPUs and 64 GiB) reports them, and the node's record,
// which the placer books against, takes them; --disk-gb was not given and
// is not reported, so the node keeps its disk. Without a flag given the
// daemon reports none: its defaults never override the record.
func TestRestartedDaemonsConfiguredScalarsReachTheNode(t *testing.T) {
	hs := newHarness(t)
	_, url := hs.gateway("gw1")
	dir := t.TempDir()
	stop := hs.daemon("n1", dir, url) // joins with 32 vCPU, 65536 MB, 500 GB
	hs.eventually("n1", core.NodeConnected)
	stop()

	defaults, err := agent.ParseFlags([]string{"--node", "n1"})
	require.NoError(t, err)
	require.Nil(t, defaults.Scalars, "defaults are not reported")
	flags, err := agent.ParseFlags([]string{"--node", "n1", "--vcpu", "4", "--memory-mb=4096"})
	require.NoError(t, err)
	require.NotNil(t, flags.Scalars)
	require.Nil(t, flags.Scalars.DiskGB, "a flag not given is not reported")

	hs.daemonWith("n1", dir, func(c *agent.Config) { c.Scalars = flags.Scalars }, url)
	allocatable := func() map[string]int64 {
		rows, err := hs.d.Q.NodeResourceListByNode(hs.ctx, "n1")
		require.NoError(t, err)
		out := map[string]int64{}
		for _, r := range rows {
			out[r.Resource] = r.Allocatable
		}
		return out
	}
	require.Eventually(t, func() bool { return allocatable()["vcpu"] == 4 }, 10*time.Second, 5*time.Millisecond,
		"the node keeps the vCPUs of its first join")
	require.Equal(t, map[string]int64{"vcpu": 4, "memory": 4096, "disk": 500}, allocatable())

	_, err = agent.ParseFlags([]string{"--node", "n1", "--vcpu", "-1"})
	require.Error(t, err, "a negative scalar is refused at start")
}

// A busy node's daemon restarted with a smaller --vcpu than its bookings
// hold: the shrink is refused (ScalarsMismatch) but waits, and once the
// reservation is released the node's resync, run by a worker after its
// period, adopts it; the daemon is not restarted a second time.
func TestRestartedDaemonsShrinkReachesTheNodeOnceBookingsEnd(t *testing.T) {
	hs := newHarness(t)
	_, url := hs.gateway("gw1")
	dir := t.TempDir()
	stop := hs.daemon("n1", dir, url) // joins with 32 vCPU
	hs.eventually("n1", core.NodeConnected)
	stop()

	h := commands.New(hs.d.Pool, commands.Config{})
	require.NoError(t, hs.d.Q.TenantEnsure(hs.ctx, "acme"))
	for _, r := range []string{"gpu", "vcpu", "memory", "disk"} {
		_, err := h.SetQuota(hs.ctx, operator, commands.SetQuota{Tenant: "acme", Resource: r, Max: 1 << 30})
		require.NoError(t, err)
	}
	now := hs.d.Now(t)
	held, err := h.CreateReservation(hs.ctx, tenant, commands.CreateReservation{PoolID: "metal", GPUs: 1, VCPU: 10,
		Start: now, End: now.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, "n1", held.Reservation.NodeID)

	flags, err := agent.ParseFlags([]string{"--node", "n1", "--vcpu", "4"})
	require.NoError(t, err)
	hs.daemonWith("n1", dir, func(c *agent.Config) { c.Scalars = flags.Scalars }, url)
	scalarsMismatch := func() string {
		var raw []byte
		require.NoError(t, hs.d.Pool.QueryRow(hs.ctx, "SELECT conditions FROM nodes WHERE id = 'n1'").Scan(&raw))
		var conds []commands.NodeCondition
		require.NoError(t, json.Unmarshal(raw, &conds))
		for _, c := range conds {
			if c.Type == core.ConditionScalarsMismatch {
				return c.Reason
			}
		}
		return ""
	}
	require.Eventually(t, func() bool { return scalarsMismatch() == "BookingsDoNotFit" }, 10*time.Second,
		5*time.Millisecond, "the daemon's 4 vCPUs are refused while 10 are held")
	vcpu := func() int64 {
		rows, err := hs.d.Q.NodeResourceListByNode(hs.ctx, "n1")
		require.NoError(t, err)
		for _, r := range rows {
			if r.Resource == "vcpu" {
				return r.Allocatable
			}
		}
		return 0
	}
	require.Equal(t, int64(32), vcpu())

	_, err = h.ReleaseReservation(hs.ctx, tenant, commands.ReleaseReservation{ReservationID: held.Reservation.ID})
	require.NoError(t, err)
	hs.d.AdvanceSimClock(t, commands.DefaultNodeResyncEvery)
	w := workqueue.NewWorker(hs.d.Pool, "w", nil, nil)
	w.Handle(commands.KindNodeResync, hs.s.Reconcilers().ByKind()[commands.KindNodeResync])
	n, err := w.RunOnce(hs.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the node's resync was due")
	require.Equal(t, int64(4), vcpu(), "adopted without a second restart")
	require.Empty(t, scalarsMismatch())
}
