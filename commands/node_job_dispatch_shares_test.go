package commands

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/wire"
)

// What an open unassign holds back: every device on its GPUs, but another
// slot of a shared GPU in the same mode (the daemon takes two slots of one
// GPU for two allocations at once). A MIG instance, a whole GPU or a slot
// of another mode after a mode change, or the same slot still waits.
func TestSharesGPUOnlyTwoSlotsPass(t *testing.T) {
	t.Parallel()
	slot := func(k string) wire.AssignedDevice {
		return wire.AssignedDevice{ID: "GPU-0/" + k, GPU: "GPU-0", Kind: "slot", Visible: "GPU-0", Mode: "time-slice"}
	}
	ts := func(id string) unassignedDevice { return unassignedDevice{id: id, slotMode: "time-slice"} }
	whole := func(id string) unassignedDevice { return unassignedDevice{id: id} }
	gpu := wire.AssignedDevice{ID: "GPU-0", GPU: "GPU-0", Kind: "gpu", Visible: "GPU-0"}
	mig := wire.AssignedDevice{ID: "GPU-0/mig-1", GPU: "GPU-0", Kind: "mig", Visible: "MIG-1"}
	mps := slot("s1")
	mps.Mode = "mps"
	for _, c := range []struct {
		d    wire.AssignedDevice
		busy unassignedDevice
		want bool
	}{
		{slot("s1"), ts("GPU-0/s0"), false},
		{slot("s0"), ts("GPU-0/s0"), true},
		{mps, ts("GPU-0/s0"), true},              // another mode: before a mode change
		{slot("s0"), whole("GPU-0"), true},       // a whole GPU's holder, before a mode change
		{slot("s0"), whole("GPU-0/mig-0"), true}, // a MIG instance's, before a mode change
		{gpu, ts("GPU-0/s0"), true},              // a slot's, before a mode change
		{mig, whole("GPU-0/mig-0"), true},        // instances may move between atoms
		{mig, ts("GPU-0/s3"), true},
		{slot("s1"), ts("GPU-1/s1"), false}, // another GPU
		{gpu, whole("GPU-1"), false},
		{slot("s1"), ts("GPU-0/sx"), true}, // not a slot's id: held, to be safe
	} {
		require.Equal(t, c.want, sharesGPU(c.d, c.busy), "%s behind %s", c.d.ID, c.busy.id)
	}
}
