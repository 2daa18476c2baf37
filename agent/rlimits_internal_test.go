package agent

import (
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A daemon that may raise its hard limits gives every container the
// chosen ones; one that may not (no CAP_SYS_RESOURCE) gives its own hard
// limit where the chosen is higher, names each such limit, and still
// gives the chosen ones it can (lower hard limits, soft limits below its
// own). Open files never exceed the node's fs.nr_open.
func TestWorkloadRlimitsWithinWhatTheDaemonCanGrant(t *testing.T) {
	own := map[int]uint64{unix.RLIMIT_MEMLOCK: 8 << 20, unix.RLIMIT_NOFILE: 20000, unix.RLIMIT_CORE: rlimitInfinity,
		unix.RLIMIT_STACK: rlimitInfinity, unix.RLIMIT_SIGPENDING: 96367, unix.RLIMIT_NPROC: 96367}
	byName := func(rs []specs.POSIXRlimit) map[string][2]uint64 {
		m := map[string][2]uint64{}
		for _, r := range rs {
			m[r.Type] = [2]uint64{r.Soft, r.Hard}
		}
		return m
	}

	rs, lowered := workloadRlimits(daemonLimits{canRaise: true, hard: own})
	require.Empty(t, lowered)
	got := byName(rs)
	require.Len(t, got, 16, "every rlimit the kernel has is named")
	require.Equal(t, [2]uint64{rlimitInfinity, rlimitInfinity}, got["RLIMIT_MEMLOCK"])
	require.Equal(t, [2]uint64{65536, 1 << 20}, got["RLIMIT_NOFILE"])
	require.Equal(t, [2]uint64{0, 0}, got["RLIMIT_CORE"])

	rs, lowered = workloadRlimits(daemonLimits{canRaise: false, hard: own})
	got = byName(rs)
	require.Equal(t, [2]uint64{8 << 20, 8 << 20}, got["RLIMIT_MEMLOCK"])
	require.Equal(t, [2]uint64{20000, 20000}, got["RLIMIT_NOFILE"])
	require.Equal(t, [2]uint64{96367, 96367}, got["RLIMIT_NPROC"])
	require.Equal(t, [2]uint64{0, 0}, got["RLIMIT_CORE"], "lowering needs no capability")
	require.Equal(t, [2]uint64{64 << 20, rlimitInfinity}, got["RLIMIT_STACK"])
	require.Equal(t, [2]uint64{65536, 65536}, got["RLIMIT_SIGPENDING"])
	require.Equal(t, []string{"RLIMIT_MEMLOCK 8388608 (chosen unlimited)", "RLIMIT_NOFILE 20000 (chosen 1048576)",
		"RLIMIT_NPROC 96367 (chosen unlimited)"}, lowered)

	// No process may have more open files than fs.nr_open, capability or
	// not: runc would fail to start the container.
	rs, lowered = workloadRlimits(daemonLimits{canRaise: true, hard: own, nrOpen: 50000})
	require.Equal(t, [2]uint64{50000, 50000}, byName(rs)["RLIMIT_NOFILE"])
	require.Equal(t, []string{"RLIMIT_NOFILE 50000 (chosen 1048576)"}, lowered)
}
