package agent

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/testenv"
)

// Pseudo-terminals are the node's, shared by every container's /dev/pts
// (kernel.pty.max, 4,096, less the 1,024 reserved to the node's own):
// one allocation that opens all it can must not leave another without
// any. Each container's /dev/pts holds maxPTYs.
func TestContainerPTYsAreBounded(t *testing.T) {
	testenv.Program(t, "python3", "", "python3")
	sb := containerSandbox(t)
	a, b := assignOf("alc_pty_hog", 1, 0), assignOf("alc_pty_other", 1, 0)
	sb.forgetAtEnd(t, a, b)
	sb.background(t, a, `python3 -c '
import os, time
fds = []
try:
    while True: fds.append(os.openpty())
except OSError as e: print(len(fds), e.strerror, flush=True)
time.sleep(600)' > /work/ptys 2>&1`)
	out, code := sb.runScript(t, a, `while ! [ -s /work/ptys ]; do sleep 0.1; done; cat /work/ptys`)
	require.Zero(t, code, out)
	require.Equal(t, "64 No space left on device", strings.TrimSpace(out), "its own /dev/pts is full")
	out, code = sb.runScript(t, b, `python3 -c 'import os; os.openpty(); print("opened")'`)
	require.Zero(t, code, out)
	require.Equal(t, "opened", strings.TrimSpace(out), "another allocation still gets one")
}
