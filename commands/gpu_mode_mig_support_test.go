package commands_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
)

// liveAtoms counts the live atoms under gpu: what tenants are offered.
func (f *fixture) liveAtoms(t *testing.T, gpu string) int {
	t.Helper()
	var n int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx,
		"SELECT count(*) FROM devices WHERE parent_id = $1 AND NOT retired", gpu).Scan(&n))
	return n
}

// A MIG layout on a GPU without MIG (an L4: nvidia-smi says "MIG mode:
// N/A") was accepted, and its MIG atoms offered to tenants whose
// instances could never get the device. It is refused, naming the GPU and
// its model, and nothing changes; the same GPU still takes time slices.
func TestSetGPUModeRefusesMIGOnAGPUWithoutMIG(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.h.RegisterNode(f.ctx, operator, commands.RegisterNode{ID: "l4", PoolID: commandstest.Pool,
		VCPU: 32, MemoryMB: 256 << 10, DiskGB: 2000, GPUs: []commands.GPUInventory{
			{UUID: "GPU-l4-0", Model: "L4-24GB", MemoryMB: 23034, Layout: exclusive}}})
	require.NoError(t, err)

	_, err = f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: "GPU-l4-0",
		Layout: core.GPULayout{Mode: core.GPUMIG, MIG: []string{"1g.5gb", "1g.5gb"}}})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "GPU GPU-l4-0 (model L4-24GB) cannot be partitioned with MIG")
	require.Zero(t, f.liveAtoms(t, "GPU-l4-0"), "no MIG atom offered")
	mode, err := f.d.Q.DeviceGet(f.ctx, "GPU-l4-0")
	require.NoError(t, err)
	require.Equal(t, "exclusive", *mode.Mode)

	_, err = f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: "GPU-l4-0",
		Layout: core.GPULayout{Mode: core.GPUTimeSlice, Slots: 4}})
	require.NoError(t, err)
	require.Equal(t, 4, f.liveAtoms(t, "GPU-l4-0"))

	// Registering one in MIG mode is the same mistake.
	_, err = f.h.RegisterNode(f.ctx, operator, commands.RegisterNode{ID: "l4b", PoolID: commandstest.Pool,
		VCPU: 32, MemoryMB: 256 << 10, DiskGB: 2000, GPUs: []commands.GPUInventory{
			{UUID: "GPU-l4b-0", Model: "L4-24GB", MemoryMB: 23034,
				Layout: core.GPULayout{Mode: core.GPUMIG, MIG: []string{"1g.5gb"}}}}})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "GPU GPU-l4b-0 (model L4-24GB) cannot be partitioned with MIG")
}

// What the node's daemon found decides over the model's name: an "a100"
// whose driver says MIG N/A is refused; a model the list does not know
// whose daemon reports MIG takes a layout. A daemon that says nothing
// (an old one, fake GPUs) leaves the recorded answer as it was.
func TestSetGPUModeMIGFollowsWhatTheDaemonReports(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := f.node(t, "n1", exclusive, exclusive)
	d := f.connect(t, "n1", "j1", 0)
	no, yes := false, true
	report := func(capable ...*bool) {
		t.Helper()
		inv := commands.NodeInventory{}
		for i, c := range capable {
			inv.GPUs = append(inv.GPUs, commands.ReportedGPU{UUID: gpus[i], Model: "a100", MemoryMB: 81920, MIGCapable: c})
		}
		_, err := f.h.NodeSessions().ReconcileNodeInventory(f.ctx, "n1", d.epoch, inv)
		require.NoError(t, err)
	}
	mig := core.GPULayout{Mode: core.GPUMIG, MIG: []string{"3g.40gb", "3g.40gb"}}
	setMode := func(gpu string) error {
		_, err := f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: gpu, Layout: mig})
		return err
	}

	report(&no, nil)
	err := setMode(gpus[0])
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "its node's daemon reports that it has no MIG")
	require.NoError(t, setMode(gpus[1]), "not reported: an a100 has MIG")

	report(nil, nil)
	require.Error(t, setMode(gpus[0]), "a daemon that says nothing keeps the recorded answer")
	report(&yes, nil)
	require.NoError(t, setMode(gpus[0]))

	// Recorded in MIG mode, then reported without MIG: a mismatch.
	report(&no, nil)
	c, ok := f.nodeConditions(t, "n1")[core.ConditionGPUMismatch]
	require.True(t, ok, "raised")
	require.Equal(t, gpus[0]+" reported with no MIG support (recorded mode mig)", c.Message)
}

// An A30 has 4 compute slices, not 7: a layout of more is refused before
// it offers instances the GPU cannot make.
func TestSetGPUModeMIGSlicesOfTheModel(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.h.RegisterNode(f.ctx, operator, commands.RegisterNode{ID: "a30", PoolID: commandstest.Pool,
		VCPU: 32, MemoryMB: 256 << 10, DiskGB: 2000, GPUs: []commands.GPUInventory{
			{UUID: "GPU-a30-0", Model: "A30-24GB", MemoryMB: 24576, Layout: exclusive}}})
	require.NoError(t, err)
	_, err = f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: "GPU-a30-0",
		Layout: core.GPULayout{Mode: core.GPUMIG, MIG: []string{"2g.6gb", "1g.4gb", "1g.4gb", "1g.4gb"}}})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%v", err)
	require.ErrorContains(t, err, "MIG layout uses 5 compute slices; GPU GPU-a30-0 (model A30-24GB) has 4")
	_, err = f.h.SetGPUMode(f.ctx, operator, commands.SetGPUMode{GPUID: "GPU-a30-0",
		Layout: core.GPULayout{Mode: core.GPUMIG, MIG: []string{"2g.12gb", "1g.6gb", "1g.6gb"}}})
	require.NoError(t, err)
	require.Equal(t, 3, f.liveAtoms(t, "GPU-a30-0"))
}
