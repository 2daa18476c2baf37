package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/wire"
)

// A daemon whose state directory was wiped while its allocations'
// containers ran (its journal, its instance record and runc's state went
// with it) stops those containers at start, before any session, and once
// an allocation's recorded window has ended releases what it left (its
// directory, its mounted /work, its user id). An allocation still within
// its window keeps its directory and the tenant's files for the assign
// that brings it back. Another daemon's allocation, in the same workload
// root and uid table, is not touched. Before the daemon did this, the
// processes ran on until the first resync raced the re-assign, and the
// directory, /work mount and user id stayed for as long as the machine ran.
func TestAWipedStateDirectoryLeavesNothingOfTheDaemonsBehind(t *testing.T) {
	sb := containerSandbox(t)
	now := time.Now()
	ended, booked := assignOf("alc_ended", 1, 128), assignOf("alc_booked", 1, 128)
	// Both containers start within their windows (a container started
	// past its end plus the keeper's slack would end by itself at once,
	// keeper_deadline.go); the first window is then recorded as ended.
	ended.End, booked.End = now.Add(time.Hour), now.Add(time.Hour)
	sb.forgetAtEnd(t, ended, booked)
	for _, a := range []*wire.AssignPayload{ended, booked} {
		out, code := sb.runScript(t, a, `echo kept >/work/file; setsid sh -c "trap '' TERM; exec sleep 781" </dev/null >/dev/null 2>&1 & echo ok`)
		require.Zero(t, code, out)
		require.True(t, cgroupHasProcesses(sb.cfg.CgroupRoot, sb.cgroupsPath(a.AllocationID)))
	}
	ended.End = now.Add(-time.Minute)
	require.NoError(t, sb.recordAllocation(ended))

	// Another daemon on the machine: same workload root, same uid table,
	// a state directory of its own.
	alienCfg := sb.cfg
	alienCfg.StateDir, alienCfg.NodeID = t.TempDir(), sb.cfg.NodeID+"-b"
	t.Cleanup(func() { _ = removeCgroupTree("", "/compute/"+alienCfg.NodeID) })
	gpus, err := inventoryGPUs(context.Background(), alienCfg.NodeID, alienCfg.FakeGPUs)
	require.NoError(t, err)
	alien, err := openSandbox(context.Background(), alienCfg, gpus)
	require.NoError(t, err)
	theirs := assignOf("alc_theirs", 1, 128)
	theirs.End = now.Add(time.Hour)
	alien.forgetAtEnd(t, theirs)
	out, code := alien.runScript(t, theirs, `setsid sleep 782 </dev/null >/dev/null 2>&1 & echo ok`)
	require.Zero(t, code, out)
	theirs.End = now.Add(-time.Minute)
	require.NoError(t, alien.recordAllocation(theirs))

	// The state directory is wiped; the daemon starts again on it.
	entries, err := os.ReadDir(sb.cfg.StateDir)
	require.NoError(t, err)
	for _, e := range entries {
		require.NoError(t, os.RemoveAll(filepath.Join(sb.cfg.StateDir, e.Name())))
	}
	j, err := openJournal(sb.cfg.StateDir)
	require.NoError(t, err)
	again, err := openSandbox(context.Background(), sb.cfg, gpus)
	require.NoError(t, err)
	d := &daemon{cfg: sb.cfg, journal: j, log: sb.log, sandbox: again, now: time.Now}

	stopped := d.stopStrays(context.Background())
	require.ElementsMatch(t, []string{ended.AllocationID, booked.AllocationID}, stopped)
	for _, id := range stopped {
		require.False(t, cgroupHasProcesses(sb.cfg.CgroupRoot, sb.cgroupsPath(id)), "%s still runs", id)
	}
	require.True(t, cgroupHasProcesses(alienCfg.CgroupRoot, alien.cgroupsPath(theirs.AllocationID)),
		"another daemon's allocation runs on")

	released := d.releaseOrphans(context.Background(), now)
	require.Equal(t, []string{ended.AllocationID}, released)
	require.NoDirExists(t, sb.domainDir(ended.AllocationID))
	owners, err := sb.uids.owners(uidOwner(sb.state, ""))
	require.NoError(t, err)
	require.Equal(t, []string{booked.AllocationID}, owners, "the ended allocation's user id is free again")
	b, err := os.ReadFile(filepath.Join(sb.workDir(booked.AllocationID), "file"))
	require.NoError(t, err, "the booked allocation's /work waits for its assign")
	require.Equal(t, "kept\n", string(b))
	require.DirExists(t, alien.domainDir(theirs.AllocationID), "another daemon's allocation is not this one's")

	// Assigned again, the booked allocation runs in its directory as it was.
	refused, err := j.assign(*booked)
	require.NoError(t, err)
	require.Nil(t, refused)
	out, code = again.runScript(t, booked, `cat /work/file`)
	require.Zero(t, code, out)
	require.Equal(t, "kept\n", out)
	require.NoError(t, again.forget(context.Background(), booked.AllocationID))
}
