package agent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/wire"
)

// fsSandbox is a container sandbox (containerSandbox) whose allocations'
// /work are file systems of their disk; it skips (fails under CI) where
// none can be made.
func fsSandbox(t *testing.T, sb *sandbox) {
	t.Helper()
	if sb.workfs == nil {
		testenv.Program(t, "mkfs.ext4", "/sbin/mkfs.ext4", "e2fsprogs")
		sb.openDiskLimit(context.Background())
	}
	testenv.Require(t, sb.diskLimit == diskFilesystem,
		"work directories cannot be file systems here (root, /dev/loop-control, mkfs.ext4 and mount needed)")
}

// mountsUnder are the mount points of this process's mount namespace (the
// host's, the daemon's) in dir or below it.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}

// freeBytes is what an unprivileged user may still write on dir's file
// system.
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	return int64(st.Bavail) * st.Bsize
}

// An allocation's /work is a file system of its disk: the kernel refuses
// at once what goes past it (ENOSPC), an `fallocate` of far more than it
// and a plain write alike, so the node's file system never gives it more
// than its allowance, whatever the 10 s measurement would see later. The
// measurement stops nothing the file system kept within the disk; a
// reclaim (DiskExceeded) empties the mounted /work; and after the release
// nothing of it is left: no mount, no image, no loop device.
func TestContainerDiskIsAFileSystemOfItsSize(t *testing.T) {
	now := time.Now()
	d, sb, j := containerDaemon(t, func() time.Time { return now })
	fsSandbox(t, sb)
	a := assignment("alc_fill", now.Add(-time.Hour), now.Add(time.Hour), 1)
	a.DiskGB = 0 // 64 MiB
	allowance := diskAllowance(a)
	d.sleepIn(t, j, a)
	require.Equal(t, wire.DiskLimitFilesystem, d.nodeState().DiskLimit, "the inventory says how /work is limited")
	requireFree(t, sb.root, 3<<30) // enough that, without the limit, the 2 GiB would be given
	work, img := sb.workDir(a.AllocationID), filepath.Join(sb.domainDir(a.AllocationID), workImage)
	require.Equal(t, []string{work}, mountsUnder(t, sb.domainDir(a.AllocationID)))
	require.NotEmpty(t, loopDevicesUnder(sb.domainDir(a.AllocationID)))

	before := freeBytes(t, sb.root)
	// Every error goes to stdout (2>&1 before the file's >), so it comes in
	// order with the echoes: the two pipes read apart interleave.
	out, code := sb.runScript(t, &a, `head -c 200000000 /dev/zero 2>&1 > /work/stream; echo "write $?"
rm /work/stream; fallocate -l 2G /work/big 2>&1; echo "fallocate $?"; head -c 10000000 /dev/zero 2>&1 > /work/stream; sync -f /work
df -B1 --output=size /work | tail -1; ls -A /work | sort | tr '\n' ' '; echo`)
	require.Zero(t, code, out)
	after := freeBytes(t, sb.root)
	lines := strings.Split(out, "\n")
	require.Contains(t, out, "No space left on device")
	require.Contains(t, lines, "fallocate 1", out)
	require.Contains(t, lines, "write 1", out)
	require.Contains(t, out, "big instances stream ", "its own entries only: no lost+found")
	size, err := strconv.ParseInt(strings.TrimSpace(lines[len(lines)-3]), 10, 64)
	require.NoError(t, err, out)
	require.LessOrEqual(t, size, allowance.bytes, "/work is no larger than its disk")
	var st unix.Stat_t
	require.NoError(t, unix.Stat(img, &st))
	require.LessOrEqual(t, st.Blocks*512, allowance.bytes, "the image holds no more of the node's disk than the allowance")
	// Others on the machine write too: a margin, far below the 2 GiB asked.
	require.Less(t, before-after, allowance.bytes+512<<20,
		"the node's free space drops by the allowance at most, not by the 2 GiB asked")
	require.Empty(t, d.checkDisk(), "the measurement stops nothing the file system kept within its disk")

	// The DiskExceeded path on a mounted /work: the container goes, /work
	// is emptied, and the node gets the blocks back (discard).
	require.NoError(t, sb.stop(context.Background(), a.AllocationID))
	require.NoError(t, sb.reclaimWork(a.AllocationID))
	require.Equal(t, int64(1), workUsage(work, nil).files, "/work is empty")
	require.NoError(t, unix.Stat(img, &st))
	require.Less(t, st.Blocks*512, int64(32<<20), "what was deleted is given back to the node's file system")

	require.NoError(t, sb.forget(context.Background(), a.AllocationID))
	require.Empty(t, mountsUnder(t, sb.root), "no mount left")
	require.NoFileExists(t, img)
	require.NoDirExists(t, sb.domainDir(a.AllocationID))
	require.Empty(t, loopDevicesUnder(sb.domainDir(a.AllocationID)), "no loop device left bound to the image")
	if losetup, err := exec.LookPath("losetup"); err == nil {
		all, err := exec.Command(losetup, "--list", "--noheadings", "--output", "BACK-FILE").Output()
		require.NoError(t, err)
		require.NotContains(t, string(all), sb.domainDir(a.AllocationID), "losetup knows no loop device of it")
	}
}

// A daemon that restarts while an allocation's container runs adopts its
// /work as it is: the same mount, the files kept. After a node's reboot
// (the container and the mount gone, the image kept) the next workload
// finds its files again on the image, mounted anew.
func TestRestartedDaemonKeepsTheWorkFileSystem(t *testing.T) {
	sb := containerSandbox(t)
	fsSandbox(t, sb)
	a := assignOf("alc_kept", 1, 128)
	sb.forgetAtEnd(t, a)
	out, code := sb.runScript(t, a, `echo kept > /work/file && echo ok`)
	require.Zero(t, code, out)
	work := sb.workDir(a.AllocationID)
	var was unix.Stat_t
	require.NoError(t, unix.Stat(work, &was))

	again, err := openSandbox(context.Background(), sb.cfg, sb.devices.gpus)
	require.NoError(t, err)
	require.Equal(t, diskFilesystem, again.diskLimit)
	out, code = again.runScript(t, a, `cat /work/file`)
	require.Zero(t, code, out)
	require.Equal(t, "kept\n", out)
	var is unix.Stat_t
	require.NoError(t, unix.Stat(work, &is))
	require.Equal(t, was.Dev, is.Dev, "the same file system, adopted")
	require.Equal(t, []string{work}, mountsUnder(t, sb.domainDir(a.AllocationID)), "mounted once")

	// A reboot: no container, no mount, the allocation's directory kept.
	require.NoError(t, again.stop(context.Background(), a.AllocationID))
	require.NoError(t, releaseWork(context.Background(), sb.domainDir(a.AllocationID), work))
	require.Empty(t, mountsUnder(t, sb.domainDir(a.AllocationID)))
	out, code = again.runScript(t, a, `cat /work/file; df -B1 --output=size /work | tail -1`)
	require.Zero(t, code, out)
	require.True(t, strings.HasPrefix(out, "kept\n"), out)
	require.Equal(t, []string{work}, mountsUnder(t, sb.domainDir(a.AllocationID)), "the image mounted again")

	require.NoError(t, again.forget(context.Background(), a.AllocationID))
	require.Empty(t, mountsUnder(t, sb.root))
	require.Empty(t, loopDevicesUnder(sb.domainDir(a.AllocationID)))
}

// An allocation whose /work already holds files but has no image (it
// started under a daemon that only measured) keeps its directory: a file
// system mounted over it would hide those files from the measurement.
func TestWorkWithFilesButNoImageStaysADirectory(t *testing.T) {
	sb := containerSandbox(t)
	fsSandbox(t, sb)
	a := &wire.AssignPayload{AllocationID: "alc_plain", VCPU: 1, MemoryMB: 128}
	sb.forgetAtEnd(t, a)
	work := sb.workDir(a.AllocationID)
	require.NoError(t, mkdirNoFollow(sb.domainDir(a.AllocationID), 0o700, 0))
	require.NoError(t, mkdirNoFollow(work, 0o700, 0))
	require.NoError(t, os.WriteFile(filepath.Join(work, "old"), []byte("old\n"), 0o644))
	out, code := sb.runScript(t, a, `cat /work/old`)
	require.Zero(t, code, out)
	require.Equal(t, "old\n", out)
	require.Empty(t, mountsUnder(t, sb.domainDir(a.AllocationID)))
}

// A file of /work held open on the host (an operator's shell, a log
// shipper) keeps its file system busy: the release waits for it, and goes
// on once it is closed, rather than failing the unassign at the first
// refusal.
func TestReleaseWaitsForAWorkFileHeldOpen(t *testing.T) {
	sb := containerSandbox(t)
	fsSandbox(t, sb)
	a := assignOf("alc_held", 1, 128)
	sb.forgetAtEnd(t, a)
	out, code := sb.runScript(t, a, `echo held > /work/file && echo ok`)
	require.Zero(t, code, out)
	f, err := os.Open(filepath.Join(sb.workDir(a.AllocationID), "file"))
	require.NoError(t, err)
	require.NoError(t, sb.stop(context.Background(), a.AllocationID))
	require.ErrorIs(t, unix.Unmount(sb.workDir(a.AllocationID), 0), unix.EBUSY, "held open: busy")

	released := make(chan error, 1)
	go func() { released <- sb.forget(context.Background(), a.AllocationID) }()
	select {
	case err := <-released:
		t.Fatalf("released while a file of /work was open: %v", err)
	case <-time.After(100 * time.Millisecond): // still waiting, as it should
	}
	require.NoError(t, f.Close())
	require.NoError(t, <-released)
	require.Empty(t, mountsUnder(t, sb.root))
	require.NoDirExists(t, sb.domainDir(a.AllocationID))
}

// A daemon stopped gracefully deletes its containers and leaves nothing
// mounted on the node, the images kept: the allocation's next workload,
// under a daemon started again, finds its files on its /work mounted anew.
func TestShutdownUnmountsWorkAndKeepsItsFiles(t *testing.T) {
	now := time.Now()
	d, sb, j := containerDaemon(t, func() time.Time { return now })
	fsSandbox(t, sb)
	a := assignment("alc_down", now.Add(-time.Hour), now.Add(time.Hour), 1)
	d.sleepIn(t, j, a)
	out, code := sb.runScript(t, &a, `echo kept > /work/file && echo ok`)
	require.Zero(t, code, out)
	work := sb.workDir(a.AllocationID)
	require.Equal(t, []string{work}, mountsUnder(t, sb.root))

	d.shutdown()
	require.Empty(t, sb.containers(context.Background()), "no container left")
	require.Empty(t, mountsUnder(t, sb.root), "nothing mounted left")
	require.Empty(t, loopDevicesUnder(sb.domainDir(a.AllocationID)), "no loop device left")
	require.FileExists(t, filepath.Join(sb.domainDir(a.AllocationID), workImage))

	out, code = sb.runScript(t, &a, `cat /work/file`)
	require.Zero(t, code, out)
	require.Equal(t, "kept\n", out)
	require.Equal(t, []string{work}, mountsUnder(t, sb.root), "mounted again")
}
