package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An allocation's container ends by itself at its keeper's deadline (its
// window's end plus the stop grace and keeperSlack) when no daemon stops
// it: a daemon SIGSTOPped, hung or killed across the end. Its setsid,
// twice-forked and TERM-ignoring processes go with it, whatever they did
// to their sessions and process groups. Before the keeper had a deadline,
// they ran until a daemon came back (a daemon frozen 5 s past the end: 5 s
// more; one killed and not restarted: for good). An allocation whose
// window was extended meanwhile (moveKeeperDeadline) runs on.
func TestKeeperEndsAContainerNoDaemonStopped(t *testing.T) {
	sb := containerSandbox(t)
	now := time.Now()
	// Windows that end so that the keepers' deadlines fall 2 s from now.
	end := now.Add(-sb.cfg.StopGrace - keeperSlack + 2*time.Second)
	ending, extended := assignOf("alc_keeperend", 1, 64), assignOf("alc_keeperext", 1, 64)
	ending.Start, ending.End = end.Add(-time.Hour), end
	extended.Start, extended.End = end.Add(-time.Hour), end
	sb.forgetAtEnd(t, ending, extended)
	hostile := `trap '' TERM; setsid sh -c "trap '' TERM; exec sleep 9911" </dev/null >/dev/null 2>&1 &
(sh -c "trap '' TERM; exec sleep 9912" </dev/null >/dev/null 2>&1 &); echo ok`
	out, code := sb.runScript(t, ending, hostile)
	require.Zero(t, code, out)
	out, code = sb.runScript(t, extended, hostile)
	require.Zero(t, code, out)
	require.True(t, cgroupHasProcesses(sb.cfg.CgroupRoot, sb.cgroupsPath(ending.AllocationID)))
	extended.End = end.Add(time.Hour)
	require.NoError(t, sb.moveKeeperDeadline(extended))

	deadline := now.Add(2 * time.Second)
	require.Eventually(t, func() bool {
		return !cgroupHasProcesses(sb.cfg.CgroupRoot, sb.cgroupsPath(ending.AllocationID))
	}, 2*time.Second+keeperPoll+10*time.Second, 10*time.Millisecond, "nothing stopped the container past its deadline")
	t.Logf("the container ended %v after its keeper's deadline", time.Since(deadline))
	// The extended one's keeper looks at its deadline within keeperPoll.
	require.Never(t, func() bool {
		return !cgroupHasProcesses(sb.cfg.CgroupRoot, sb.cgroupsPath(extended.AllocationID))
	}, keeperPoll+time.Second, 50*time.Millisecond, "the extended allocation's container ended at its old deadline")
}

// The keeper's clock, /proc/uptime in its container, is the node's boot
// clock, which the daemon writes its deadline in: runc gives the container
// its own /proc but no time namespace. Were the container's boot clock
// offset from the node's (a time namespace), the keeper would end its
// workload that much early or late.
func TestKeeperReadsTheNodesBootClock(t *testing.T) {
	sb := containerSandbox(t)
	a := assignOf("alc_keeperclock", 1, 64)
	sb.forgetAtEnd(t, a)
	_, code := sb.runScript(t, a, "true") // the container started
	require.Zero(t, code)
	before, err := sb.bootClock()
	require.NoError(t, err)
	out, code := sb.runScript(t, a, "read -r u _ </proc/uptime; echo $u")
	require.Zero(t, code, out)
	after, err := sb.bootClock()
	require.NoError(t, err)
	up, err := time.ParseDuration(strings.TrimSpace(out) + "s")
	require.NoError(t, err, out)
	// /proc/uptime shows centiseconds, truncated.
	require.GreaterOrEqual(t, up, before.Truncate(10*time.Millisecond), "the container's boot clock is behind the node's")
	require.LessOrEqual(t, up, after, "the container's boot clock is ahead of the node's")
	t.Logf("the node's boot clock %v before, %v after, the container's %v in between", before, after, up)
}
