package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/wire"
)

// Over the wire: a daemon's instance.stopped report of a process that
// exited on its own (exited, exitCode 3) fails the instance with its exit
// code; the gateway passes both on.
func TestExitedInstanceOverTheWire(t *testing.T) {
	t.Parallel()
	f := setup(t)
	d, assign, inst := f.runningInstance(t)

	three := int32(3)
	exited, err := json.Marshal(wire.InstanceStopped{InstanceID: inst.ID, AllocationID: assign.AllocationID,
		Reason: "exited", Exited: true, ExitCode: &three, At: f.d.Now(t)})
	require.NoError(t, err)
	d.send(wire.Message{Type: wire.TypeInstanceStopped, AllocationID: assign.AllocationID, Payload: exited})
	require.Eventually(t, func() bool { s, _ := f.instanceState(inst.ID); return s == "failed" },
		10*time.Second, 5*time.Millisecond)
	i, err := f.d.Q.InstanceGet(f.ctx, inst.ID)
	require.NoError(t, err)
	require.Equal(t, "exit status 3", i.Reason)
	require.NotNil(t, i.ExitCode)
	require.Equal(t, int32(3), *i.ExitCode)
	f.requireInvariants()
}

// A daemon's reason for an instance it stopped reaches the tenant (the
// instance, its events, webhooks): it is stored cut to 1 KiB, with NUL
// bytes and invalid UTF-8 made U+FFFD, so a daemon that sends megabytes
// cannot fill the instance and every event of it, and one whose text
// PostgreSQL refuses still has its report recorded instead of leaving the
// instance running.
func TestInstanceStopReasonIsBoundedAndStorable(t *testing.T) {
	t.Parallel()
	f := setup(t)
	d, assign, inst := f.runningInstance(t)

	reason := "watchdog\x00\xff" + strings.Repeat("é", 1<<20) // 2 MiB: under wire.MaxMessageBytes
	stopped, err := json.Marshal(wire.InstanceStopped{InstanceID: inst.ID, AllocationID: assign.AllocationID,
		Reason: reason, At: f.d.Now(t)})
	require.NoError(t, err)
	d.send(wire.Message{Type: wire.TypeInstanceStopped, AllocationID: assign.AllocationID, Payload: stopped})
	require.Eventually(t, func() bool { s, _ := f.instanceState(inst.ID); return s == "stopped" },
		10*time.Second, 5*time.Millisecond)
	_, got := f.instanceState(inst.ID)
	require.LessOrEqual(t, len(got), 1024)
	require.True(t, utf8.ValidString(got))
	require.True(t, strings.HasPrefix(got, "watchdog\uFFFD\uFFFDé"), "%.40q", got)
	f.requireInvariants()
}
