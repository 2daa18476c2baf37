package agent

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A workload does not learn which allocations share its node: each /work
// is a loop device whose backing file's path, in sysfs and readable by
// every user, names its allocation.
func TestContainerSeesNoOtherAllocationsWorkImage(t *testing.T) {
	sb := containerSandbox(t)
	fsSandbox(t, sb)
	a, b := assignOf("alc_block_a", 1, 0), assignOf("alc_block_b", 1, 0)
	sb.forgetAtEnd(t, a, b)
	out, code := sb.runScript(t, b, `echo b`)
	require.Zero(t, code, out)
	require.NotEmpty(t, loopDevicesUnder(sb.domainDir(b.AllocationID)))
	out, code = sb.runScript(t, a, `cat /sys/block/loop*/loop/backing_file /sys/devices/virtual/block/*/loop/backing_file \
  /sys/dev/block/*/loop/backing_file 2>/dev/null; echo done`)
	require.Zero(t, code, out)
	require.NotContains(t, out, b.AllocationID)
	require.Equal(t, "done\n", out, "no loop device's backing file")
}
