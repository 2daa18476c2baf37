package commands_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/wire"
)

// A pool is created with its workload network mode (none when left out),
// stores it and announces it in pool.created; any other mode is
// INVALID_ARGUMENT and writes nothing.
func TestCreatePoolWorkloadNetwork(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, c := range []struct{ id, asked, want string }{
		{"net-default", "", "none"},
		{"net-none", "none", "none"},
		{"net-bridge", "bridge", "bridge"},
		{"net-host", "host", "host"},
	} {
		res, err := f.h.CreatePool(f.ctx, operator, commands.CreatePool{ID: c.id, SiteID: "fra1",
			Kind: commands.PoolBareMetal, WorkloadNetwork: c.asked})
		require.NoError(t, err, c.id)
		require.Equal(t, c.want, res.WorkloadNetwork, c.id)
		row, err := f.d.Q.PoolGet(f.ctx, c.id)
		require.NoError(t, err)
		require.Equal(t, c.want, row.WorkloadNetwork, c.id)
		var data []byte
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT data FROM outbox WHERE type = $1 AND subject = $2",
			core.EventPoolCreated, core.PoolSubject(c.id)).Scan(&data))
		var ev struct {
			WorkloadNetwork string `json:"workloadNetwork"`
		}
		require.NoError(t, json.Unmarshal(data, &ev))
		require.Equal(t, c.want, ev.WorkloadNetwork, c.id)
	}

	events := f.countEvents(t, core.EventPoolCreated)
	for _, bad := range []string{"nat", "Bridge", "host "} {
		_, err := f.h.CreatePool(f.ctx, operator, commands.CreatePool{ID: "net-bad", SiteID: "fra1",
			Kind: commands.PoolBareMetal, WorkloadNetwork: bad})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%q: %v", bad, err)
		require.ErrorContains(t, err, "none, bridge or host")
	}
	_, err := f.d.Q.PoolGet(f.ctx, "net-bad")
	require.Error(t, err, "nothing written")
	require.Equal(t, events, f.countEvents(t, core.EventPoolCreated))
}

// Every assign of an allocation carries its pool's network mode: at
// booking and when an extension sends it again. A pool left at none sends
// no mode at all, as before pools had one.
func TestAssignCarriesPoolNetwork(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive) // in fra1-gpu, mode none
	for _, mode := range []string{"bridge", "host"} {
		pool := "fra1-" + mode
		_, err := f.h.CreatePool(f.ctx, operator, commands.CreatePool{ID: pool, SiteID: "fra1",
			Kind: commands.PoolBareMetal, WorkloadNetwork: mode})
		require.NoError(t, err)
		_, err = f.h.RegisterNode(f.ctx, operator, commands.RegisterNode{ID: "n-" + mode, PoolID: pool,
			VCPU: 64, MemoryMB: 512 * 1024, DiskGB: 2000, GPUs: []commands.GPUInventory{
				{UUID: "GPU-n-" + mode, Model: "a100", MemoryMB: 81920, Layout: exclusive}}})
		require.NoError(t, err)
	}

	start, end := window(0, 3) // begun: assigned at booking
	for _, c := range []struct{ pool, node, want string }{
		{"fra1-gpu", "n1", ""},
		{"fra1-bridge", "n-bridge", wire.NetworkBridge},
		{"fra1-host", "n-host", wire.NetworkHost},
	} {
		res := f.reserve(t, tenantA, commands.CreateReservation{PoolID: c.pool, GPUs: 1, Start: start, End: end})
		require.Equal(t, core.ReservationBooked, res.Reservation.State)
		jobs := f.assignmentJobs(t, c.node)
		require.Len(t, jobs, 1, c.pool)
		require.Equal(t, c.want, decodeAssign(t, jobs[0].Payload).Network, c.pool)
		var fields map[string]any
		require.NoError(t, json.Unmarshal(jobs[0].Payload, &fields))
		if c.want == "" {
			require.NotContains(t, fields, "network", "none is left out")
		} else {
			require.Equal(t, c.want, fields["network"], c.pool)
		}

		_, err := f.h.ExtendReservation(f.ctx, tenantA, commands.ExtendReservation{ReservationID: res.Reservation.ID,
			NewEnd: end.Add(time.Hour)})
		require.NoError(t, err)
		jobs = f.assignmentJobs(t, c.node)
		require.Len(t, jobs, 2, c.pool)
		require.Equal(t, c.want, decodeAssign(t, jobs[1].Payload).Network, "the extension's assign, %s", c.pool)
	}
	f.requireInvariants(t)
}
