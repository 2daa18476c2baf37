package projections_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
)

// The log orders events by the transaction id each transaction took at its
// first write, so two commands on one node can appear in the opposite order
// of the versions they wrote (a probe saw a taint at version 7 after a
// drain at version 9). Each read model field keeps the value of the newest
// event that wrote it, whatever order the events come in: the older taint
// still lands, and the newer drain is not undone.
func TestNodeAndGPUEventsOutOfVersionOrder(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", exclusive)
	f.catchUp(t)
	n, err := f.d.Q.RmFleetNodeGet(f.ctx, "n1")
	require.NoError(t, err)
	g, err := f.d.Q.RmFleetDeviceGet(f.ctx, gpus[0])
	require.NoError(t, err)

	appendEvent := func(typ, subject string, data any) {
		t.Helper()
		ev, err := core.NewEvent(typ, "", subject, data)
		require.NoError(t, err)
		require.NoError(t, pgx.BeginFunc(f.ctx, f.d.Pool, func(tx pgx.Tx) error {
			_, err := outbox.Append(f.ctx, db.New(tx), ev)
			return err
		}))
	}
	// In the log: the newer change of each aggregate first.
	appendEvent(core.EventNodeDraining, core.NodeSubject("n1"), core.NodeDrainEventData{ID: "n1",
		State: core.State(n.State), NoScheduleReasons: []string{core.NoScheduleDraining}, Version: n.Version + 2})
	appendEvent(core.EventNodeTainted, core.NodeSubject("n1"), core.NodeSchedulingEventData{ID: "n1",
		Taints: []string{"k0"}, Version: n.Version + 1})
	mig := core.GPULayout{Mode: core.GPUMIG, MIG: []string{"3g.40gb", "3g.40gb"}}
	appendEvent(core.EventGPUModeChanged, core.DeviceSubject(g.ID), core.GPUModeChangedEventData{ID: g.ID, NodeID: "n1",
		Layout: mig, Atoms: []string{g.ID + "/mig-0", g.ID + "/mig-1"}, Version: g.Version + 2})
	appendEvent(core.EventDeviceQuarantined, core.DeviceSubject(g.ID), core.DeviceStatusEventData{ID: g.ID, NodeID: "n1",
		Health: g.Health, Quarantined: true, Version: g.Version + 1})
	f.catchUp(t)

	got, err := f.d.Q.RmFleetNodeGet(f.ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, []string{"k0"}, got.Taints, "the older taint landed")
	require.Equal(t, []string{core.NoScheduleDraining}, got.NoScheduleReasons, "the newer drain stayed")
	require.Equal(t, n.Version+2, got.Version)

	devices, err := f.d.Q.RmFleetDeviceListByNode(f.ctx, "n1")
	require.NoError(t, err)
	live := map[string]bool{}
	for _, d := range devices {
		require.True(t, d.Quarantined, "%s: the older quarantine landed", d.ID)
		require.Equal(t, g.Version+2, d.GpuVersion)
		if !d.Retired {
			live[d.ID] = true
		}
	}
	require.Equal(t, map[string]bool{g.ID: true, g.ID + "/mig-0": true, g.ID + "/mig-1": true}, live,
		"the newer mode change stayed, with its atoms")
	gpu, err := f.d.Q.RmFleetDeviceGet(f.ctx, g.ID)
	require.NoError(t, err)
	require.Equal(t, "mig", *gpu.Mode)
}
