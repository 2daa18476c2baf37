package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/testenv"
)

// pidsHog is a workload that takes every process its allocation's pids
// limit allows and keeps them: it forks in a loop, each child sleeping,
// until a fork fails (the limit is reached), then goes on forking for
// hold, so that whatever process of the container ends, its slot is taken
// again at once; then it writes how many it forked into /work/held and
// waits. Perl, not the shell: a shell exits (dash) or backs off for
// seconds (bash) when it cannot fork, and would leave slots free.
func pidsHog(hold time.Duration) string {
	return `exec perl -MTime::HiRes=time -e '
my ($n, $full) = (0, 0);
while (1) {
  my $p = fork;
  if (!defined $p) { $full ||= time; last if time > $full + ` + strconv.FormatFloat(hold.Seconds(), 'f', -1, 64) + `; next }
  if ($p == 0) { sleep 1000; exit 0 }
  $n++;
}
open my $f, ">", "/work/held" or die; print $f "$n\n"; close $f; sleep 1000'`
}

// pidsOf is the allocation's pids cgroup file name ("pids.current",
// "pids.max"), as a number (-1: unreadable).
func (s *sandbox) pidsOf(t *testing.T, domain, name string) int64 {
	b, err := os.ReadFile(filepath.Join(DefaultCgroupRoot, "pids", s.cgroupsPath(domain), name))
	if err != nil { // cgroup v2
		b, err = os.ReadFile(filepath.Join(DefaultCgroupRoot, s.cgroupsPath(domain), name))
	}
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// A workload that takes every process its allocation's pids limit allows,
// and keeps taking each one that frees, does not end its own container:
// the keeper forks nothing while it waits, so it is still there across
// many polls, and still ends the container at its deadline. Before, the
// keeper (dash) forked a sleep at every poll; the workload took the slot
// that sleep's end freed, dash could not fork and exited, and the container
// ended long before its window's end (with a keeperSh keeper this test
// fails so, at the keeper's first polls).
func TestKeeperOutlivesAWorkloadHoldingEveryPid(t *testing.T) {
	testenv.Program(t, "perl", "", "perl-base")
	sb := containerSandbox(t)
	require.Equal(t, keeperBash, sb.keeperShell, "this node's bash cannot run the keeper")
	sb.keeperPoll = 100 * time.Millisecond
	sb.cfg.PidsPerVCPU = 1       // the least an allocation gets: minPids
	const hold = 2 * time.Second // 20 of the keeper's polls
	a := assignOf("alc_keeperpids", 1, 512)
	a.Start, a.End = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	sb.forgetAtEnd(t, a)
	_, code := sb.runScript(t, a, "true") // the container started
	require.Zero(t, code)
	keeper := sb.keeperPID(t, a.AllocationID)
	alive := func() bool { return cgroupHasProcesses(sb.cfg.CgroupRoot, sb.cgroupsPath(a.AllocationID)) }

	sb.background(t, a, pidsHog(hold))
	held := filepath.Join(sb.workDir(a.AllocationID), "held")
	require.Eventually(t, func() bool { _, err := os.Stat(held); return err == nil || !alive() },
		time.Minute, 10*time.Millisecond, "the workload never reached its pids limit and held it")
	require.True(t, alive(), "the container ended while its workload held every pid, long before the keeper's deadline")
	require.Equal(t, keeper, sb.keeperPID(t, a.AllocationID), "the container's first process is not its keeper")
	limit, current := sb.pidsOf(t, a.AllocationID, "pids.max"), sb.pidsOf(t, a.AllocationID, "pids.current")
	require.Equal(t, int64(minPids), limit)
	require.Equal(t, limit, current, "the workload does not hold every pid")
	n, _ := os.ReadFile(held)
	t.Logf("the workload forked %s times, reached its limit of %d pids and held it for %v: its keeper runs on",
		strings.TrimSpace(string(n)), limit, hold)

	// The window is cut short: the keeper's deadline 2 s from now, every
	// pid still taken.
	a.End = time.Now().Add(-sb.cfg.StopGrace - keeperSlack + 2*time.Second)
	require.NoError(t, sb.moveKeeperDeadline(a))
	b, err := os.ReadFile(filepath.Join(sb.keeperHostDir(a.AllocationID), keeperBootDeadline))
	require.NoError(t, err)
	secs, _, _ := strings.Cut(string(b), " ")
	deadlineSecs, err := strconv.ParseInt(secs, 10, 64)
	require.NoError(t, err)
	deadline := time.Duration(deadlineSecs) * time.Second // in the node's boot clock
	up, err := sb.bootClock()
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !alive() }, deadline-up+sb.keeperPoll+10*time.Second,
		10*time.Millisecond, "the keeper did not end the container at its deadline")
	up, err = sb.bootClock()
	require.NoError(t, err)
	require.GreaterOrEqual(t, up, deadline, "the keeper ended the container before its deadline")
	t.Logf("the container ended %v after its keeper's deadline", up-deadline)
}

// The keeper reaps what is orphaned into it: processes whose parent exited
// before them, each a zombie holding one of its allocation's pids until
// the container's first process reaps it. Under keeperBash that happens
// between two looks (bash 5.2 blocks SIGCHLD while `read -t` waits), so
// within keeperBashPoll.
func TestKeeperReapsOrphans(t *testing.T) {
	sb := containerSandbox(t)
	require.Equal(t, keeperBash, sb.keeperShell, "this node's bash cannot run the keeper")
	a := assignOf("alc_keeperreaps", 1, 256)
	sb.forgetAtEnd(t, a)
	out, code := sb.runScript(t, a, `i=0; while [ $i -lt 100 ]; do (sh -c 'exit 0' &); i=$((i+1)); done; echo started`)
	require.Zero(t, code, out)
	start := time.Now()
	require.Eventually(t, func() bool { return sb.pidsOf(t, a.AllocationID, "pids.current") == 1 },
		keeperBashPoll+5*time.Second, time.Millisecond, "the orphans' zombies still hold their pids")
	t.Logf("100 orphans reaped %v after their parent exited", time.Since(start))
}
