package agent

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/testenv"
)

// System V IPC objects (shared memory segments, semaphore sets, message
// queues) outlive the processes that made them: they stay, in the
// node's memory, until the allocation's IPC namespace goes with its
// release, and the OOM killer, which frees a process's memory, frees
// none of theirs. An allocation without a memory limit (charged to no
// limit) must not be able to pin more of the node with them than its
// /dev/shm allows. The objects here are made, not touched: the kernel
// counts what they reserve.
func TestContainerSysVIPCIsBounded(t *testing.T) {
	testenv.Program(t, "perl", "", "perl")
	sb := containerSandbox(t)
	a := assignOf("alc_ipc", 1, 0) // no memory limit: /dev/shm 64 MiB
	sb.forgetAtEnd(t, a)
	out, code := sb.runScript(t, a, `perl -e '
for (1..64) { defined(shmget(0, 16 << 20, 0600)) or do { print "shm refused at $_: $!\n"; last } }
for (1..1000) { defined(semget(0, 250, 0600)) or do { print "sem refused at $_: $!\n"; last } }
for (1..1000) { defined(msgget(0, 0600)) or do { print "msg refused at $_: $!\n"; last } }'`)
	require.Zero(t, code, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Equal(t, []string{
		"shm refused at 5: No space left on device", // 4 × 16 MiB: the 64 MiB of its /dev/shm
		"sem refused at 129: No space left on device",
		"msg refused at 33: No space left on device",
	}, lines, out)
}
