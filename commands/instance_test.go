package commands_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// instances.create needs an active reservation of the caller's;
// a start the daemon reports failed fails the instance, and only the
// instance's own node can report it.
func TestCreateInstanceRules(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	f.node(t, "n2", exclusive)
	rsv := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	other := map[string]string{"n1": "n2", "n2": "n1"}[rsv.NodeID]
	f.activate(t, rsv)

	_, err := f.h.CreateInstance(f.ctx, tenantB, commands.CreateInstance{ReservationID: rsv.ID})
	require.Equal(t, core.CodeNotFound, core.CodeOf(err), "another tenant's reservation")
	viewer := core.Actor{Tenant: "acme", Identity: "vic@acme", Role: core.RoleViewer}
	_, err = f.h.CreateInstance(f.ctx, viewer, commands.CreateInstance{ReservationID: rsv.ID})
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err))
	_, err = f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID,
		Spec: core.InstanceSpec{Command: strings.Repeat("x", core.MaxScript+1)}})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "a command sh -c could not take")

	res, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID})
	require.NoError(t, err)
	require.Equal(t, core.ProvisionRequested, res.Instance.State)
	require.Equal(t, "sleep 86400", res.Instance.Spec.Command, "the fake workload by default")
	var startID string
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT id FROM node_commands WHERE instance_id = $1 AND kind = $2",
		res.Instance.ID, core.NodeCommandInstanceStart).Scan(&startID))

	report := commands.RecordNodeJobResult{NodeID: other, Epoch: f.connect(t, other, "j1", 0).epoch, JobID: startID,
		State: "failed", Reason: "no such image"}
	require.Equal(t, core.CodeNotFound, core.CodeOf(f.h.NodeSessions().RecordNodeJobResult(f.ctx, report)),
		"a node speaks only for its own commands")
	require.Equal(t, core.ProvisionRequested, get(t, f, res.Instance.ID).State)
	report.NodeID = rsv.NodeID
	require.ErrorIs(t, f.h.NodeSessions().RecordNodeJobResult(f.ctx, report), commands.ErrSessionSuperseded,
		"a report speaks only for its session")
	require.Equal(t, core.ProvisionRequested, get(t, f, res.Instance.ID).State)
	report.Epoch = f.connect(t, rsv.NodeID, "j1", 0).epoch
	require.NoError(t, f.h.NodeSessions().RecordNodeJobResult(f.ctx, report))
	failed := get(t, f, res.Instance.ID)
	require.Equal(t, core.ProvisionFailed, failed.State)
	require.Contains(t, failed.Reason, "no such image")
	require.NoError(t, f.h.NodeSessions().RecordNodeJobResult(f.ctx, report), "a repeated report changes nothing")
	require.Equal(t, failed.Version, get(t, f, res.Instance.ID).Version)

	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: rsv.ID})
	require.NoError(t, err)
	_, err = f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID})
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "a released reservation takes no instance")
	f.requireInvariants(t)
}

func get(t *testing.T, f *fixture, id string) core.Instance {
	t.Helper()
	i, err := f.h.GetInstance(f.ctx, operator, id)
	require.NoError(t, err)
	return i
}

// A reservation has at most MaxUnfinishedInstances instances that have
// not finished, however many are asked for at once (each holds a process
// on the node's daemon); one more is CONFLICT and writes nothing, and a
// finished one makes room.
func TestInstancesPerReservationAreBounded(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	rsv := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	f.activate(t, rsv)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var created []string
	conflicts := 0
	for range commands.MaxUnfinishedInstances + 8 {
		wg.Go(func() {
			res, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				require.Equal(t, core.CodeConflict, core.CodeOf(err), "%v", err)
				require.Contains(t, err.Error(), "the most allowed")
				conflicts++
				return
			}
			created = append(created, res.Instance.ID)
		})
	}
	wg.Wait()
	require.Len(t, created, commands.MaxUnfinishedInstances)
	require.Equal(t, 8, conflicts)
	var n int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM instances WHERE reservation_id = $1", rsv.ID).Scan(&n))
	require.Equal(t, commands.MaxUnfinishedInstances, n, "nothing written for the refused ones")

	_, err := f.h.DeleteInstance(f.ctx, tenantA, created[0])
	require.NoError(t, err)
	_, err = f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID})
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "a stopping instance has not finished")
}
