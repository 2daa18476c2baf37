package commands_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// Retire is terminal: every command that would change a retired node or a
// GPU of it is CONFLICT "node n1 is retired" and writes nothing (no
// version, generation or device version bumped, no event), whether it
// would have changed something or repeated what the node already is.
// Before the fix cordon, taint, quarantine, health and mode changes were
// accepted, each bumping versions and appending an event, and an undrain
// with nothing to undo answered 200.
func TestRetiredNodeRefusesEveryCommand(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpu := f.node(t, "n1", exclusive)[0]
	// Before the retire: cordoned, drained, tainted "old", GPU healthy and
	// not quarantined, so each command below is either a change or a no-op.
	_, err := f.h.CordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n1"})
	require.NoError(t, err)
	_, err = f.h.TaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: "old"})
	require.NoError(t, err)
	_, err = f.h.DrainNode(f.ctx, operator, commands.DrainNode{NodeID: "n1"})
	require.NoError(t, err)
	_, err = f.h.RetireNode(f.ctx, operator, commands.RetireNode{NodeID: "n1"})
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"cordon (no-op)", func() error {
			_, err := f.h.CordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n1"})
			return err
		}},
		{"uncordon", func() error {
			_, err := f.h.UncordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n1"})
			return err
		}},
		{"taint", func() error {
			_, err := f.h.TaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: "new"})
			return err
		}},
		{"taint (no-op)", func() error {
			_, err := f.h.TaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: "old"})
			return err
		}},
		{"untaint", func() error {
			_, err := f.h.UntaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: "old"})
			return err
		}},
		{"untaint (no-op)", func() error {
			_, err := f.h.UntaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: "new"})
			return err
		}},
		{"drain (no-op)", func() error {
			_, err := f.h.DrainNode(f.ctx, operator, commands.DrainNode{NodeID: "n1"})
			return err
		}},
		{"undrain", func() error {
			_, err := f.h.UndrainNode(f.ctx, operator, commands.DrainNode{NodeID: "n1"})
			return err
		}},
		{"retire (no-op)", func() error {
			_, err := f.h.RetireNode(f.ctx, operator, commands.RetireNode{NodeID: "n1"})
			return err
		}},
		{"quarantine", func() error {
			_, err := f.h.QuarantineDevice(f.ctx, operator, commands.QuarantineDevice{DeviceID: gpu})
			return err
		}},
		{"unquarantine (no-op)", func() error {
			_, err := f.h.UnquarantineDevice(f.ctx, operator, commands.QuarantineDevice{DeviceID: gpu})
			return err
		}},
		{"set health unhealthy", func() error {
			_, err := f.h.SetDeviceHealth(f.ctx, operator, commands.SetDeviceHealth{DeviceID: gpu})
			return err
		}},
		{"set health healthy (no-op)", func() error {
			_, err := f.h.SetDeviceHealth(f.ctx, operator, commands.SetDeviceHealth{DeviceID: gpu, Healthy: true})
			return err
		}},
		{"set mode", func() error {
			_, err := f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: gpu,
				Layout: core.GPULayout{Mode: core.GPUTimeSlice, Slots: 2}})
			return err
		}},
		{"set mode (no-op)", func() error {
			_, err := f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: gpu, Layout: exclusive})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.retiredNodeWrites(t, "n1")
			err := tc.run()
			require.Equal(t, core.CodeConflict, core.CodeOf(err), "%v", err)
			require.ErrorContains(t, err, "node n1 is retired")
			require.Equal(t, before, f.retiredNodeWrites(t, "n1"), "a refused command writes nothing")
		})
	}
}

// nodeWrites is what any write to a node shows: its version, its desired
// generation, its devices' versions and the events in the log.
type nodeWrites struct {
	Version, Generation, DeviceVersions, Events int64
}

func (f *fixture) retiredNodeWrites(t *testing.T, id string) nodeWrites {
	t.Helper()
	var w nodeWrites
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT
	    (SELECT version FROM nodes WHERE id = $1),
	    (SELECT generation FROM node_desired WHERE node_id = $1),
	    (SELECT sum(version)::bigint FROM devices WHERE node_id = $1),
	    (SELECT count(*) FROM outbox)`, id).Scan(&w.Version, &w.Generation, &w.DeviceVersions, &w.Events))
	return w
}
