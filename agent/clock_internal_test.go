package agent

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A node whose clock is ten minutes ahead of the control plane's neither
// refuses nor stops the workloads of an allocation with five minutes left
// by the control plane's clock: its watchdog stops them at their end by
// that clock, not ten minutes before. It used to judge by the node's.
func TestWatchdogJudgesEndsByTheControlPlanesClock(t *testing.T) {
	td := newTestDaemon(t)
	cp := td.now() // t0 + 1 min
	node := cp.Add(10 * time.Minute)
	td.now = func() time.Time { return node }
	require.Equal(t, 10*time.Minute, td.adoptControlPlaneTime(cp), "the skew, as the session open measures it")
	require.Equal(t, cp, td.windowNow())

	require.Equal(t, outcomeSucceeded, td.assign(assignment("alc_a", t0, t0.Add(6*time.Minute), 1, gpu("GPU-n1-0"))).State)
	started := td.startInstance("alc_a", "ins_a", `echo $$ > pid; exec sleep 600`)
	require.Equal(t, outcomeSucceeded, started.State, started.Reason)
	pid := td.pidOf("alc_a", "ins_a")
	require.Equal(t, 5*time.Minute, td.watchdogWait(td.windowNow()), "it wakes at the end by the control plane's clock")
	require.Empty(t, td.resync(), "five minutes are left by the control plane's clock")
	require.True(t, alive(pid))

	// Five minutes pass, and the end with them.
	node = node.Add(5 * time.Minute)
	stopped := td.resync()
	require.Len(t, stopped, 1)
	require.Equal(t, "the assignment of allocation alc_a ended at "+t0.Add(6*time.Minute).Format(time.RFC3339), stopped[0].Reason)
	require.False(t, alive(pid))
}

// Until a first session opens, the node's own clock judges; each session
// open measures the control plane's clock again.
func TestControlPlaneTimeIsMeasuredAtEachSessionOpen(t *testing.T) {
	td := newTestDaemon(t)
	node := td.now()
	require.Equal(t, node, td.windowNow(), "no session yet: the node's clock")
	require.Equal(t, -time.Hour, td.adoptControlPlaneTime(node.Add(time.Hour)))
	require.Equal(t, node.Add(time.Hour), td.windowNow())
	require.Equal(t, time.Duration(0), td.adoptControlPlaneTime(node))
	require.Equal(t, node, td.windowNow())
}
