package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An allocation that reserved no vCPU and no memory runs best effort: the
// kernel's least CPU weight and no quota, no memory limit, and its
// workloads are the OOM killer's first choice on the node. One that
// reserved both has its quota, a weight in proportion to it, its memory
// limit, and an OOM score adjustment of 0 whatever the daemon's own is
// (this test raises the test process's, which the workloads would
// otherwise inherit).
func TestContainerBestEffortWithoutReservedCPUOrMemory(t *testing.T) {
	sb := containerSandbox(t)
	require.NoError(t, os.WriteFile("/proc/self/oom_score_adj", []byte("300"), 0o644))
	t.Cleanup(func() { _ = os.WriteFile("/proc/self/oom_score_adj", []byte("0"), 0o644) })
	none, both := assignOf("alc_best_effort", 0, 0), assignOf("alc_reserved", 2, 128)
	sb.forgetAtEnd(t, none, both)

	out, code := sb.runScript(t, none, "cat /proc/self/oom_score_adj")
	require.Zero(t, code, out)
	require.Equal(t, "1000", strings.TrimSpace(out))
	out, code = sb.runScript(t, both, "cat /proc/self/oom_score_adj")
	require.Zero(t, code, out)
	require.Equal(t, "0", strings.TrimSpace(out))

	cgroup := func(a string, controller, file string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(DefaultCgroupRoot, controller, sb.cgroupsPath(a), file))
		require.NoError(t, err)
		return strings.TrimSpace(string(b))
	}
	require.Equal(t, "2", cgroup(none.AllocationID, "cpu", "cpu.shares"))
	require.Equal(t, "-1", cgroup(none.AllocationID, "cpu", "cpu.cfs_quota_us"))
	require.Equal(t, "2048", cgroup(both.AllocationID, "cpu", "cpu.shares"))
	require.Equal(t, "200000", cgroup(both.AllocationID, "cpu", "cpu.cfs_quota_us"))
	require.Equal(t, "134217728", cgroup(both.AllocationID, "memory", "memory.limit_in_bytes"))
}
