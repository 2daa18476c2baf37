package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/testenv"
)

// /tmp and /dev/shm are memory that no OOM kill frees, and their size
// counts only their files' pages: each empty file is an inode and a
// dentry (about 1 KiB of the kernel's memory) that counts for nothing
// against it. An allocation without a memory limit could fill the node
// with them unless the file systems also have a number of inodes, one per
// 16 KiB of their size as /work has.
func TestContainerTmpfsInodesAreBounded(t *testing.T) {
	testenv.Program(t, "perl", "", "perl")
	sb := containerSandbox(t)
	a := assignOf("alc_inodes", 1, 0) // no memory limit: /tmp 1 GiB, /dev/shm 64 MiB
	sb.forgetAtEnd(t, a)
	out, code := sb.runScript(t, a, `for d in /tmp /dev/shm; do perl -e '
for (1..200000) { open(my $f, ">", "$ARGV[0]/f$_") or do { print "$ARGV[0] refused at $_: $!\n"; exit } }
print "$ARGV[0] took 200000\n"' $d; done`)
	require.Zero(t, code, out)
	require.Equal(t, []string{
		"/tmp refused at 65536: No space left on device", // 65,536 inodes, its root one of them
		"/dev/shm refused at 4096: No space left on device",
	}, strings.Split(strings.TrimSpace(out), "\n"), out)
}

// /tmp stays the workloads' own (1777) in a container made again for the
// same allocation, as after a daemon's graceful restart: runc gives a
// tmpfs the mode its mount point had, and the first container left that
// mount point behind in the allocation's root.
func TestContainerTmpIsWritableInAContainerMadeAgain(t *testing.T) {
	sb := containerSandbox(t)
	a := assignOf("alc_tmp_again", 1, 128)
	sb.forgetAtEnd(t, a)
	for i := range 2 {
		out, code := sb.runScript(t, a, `touch /tmp/mine && stat -c %a /tmp`)
		require.Zero(t, code, "container %d: %s", i+1, out)
		require.Equal(t, "1777", strings.TrimSpace(out), "container %d", i+1)
		require.NoError(t, sb.stop(context.Background(), a.AllocationID)) // as the daemon's shutdown does
	}
}
