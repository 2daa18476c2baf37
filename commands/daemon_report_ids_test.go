package commands_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// A daemon's report that names a job, an instance or an allocation by an
// id no object can have (a megabyte of it, a NUL) is INVALID_ARGUMENT with
// the id cut short in the message: it reaches no query, and no error or log
// line carries a daemon's megabytes.
func TestDaemonReportsNameObjectsByIDsTheyCanHave(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	epoch := f.connect(t, "n1", "j1", 0).epoch
	long := "cmd_" + strings.Repeat("x", 1<<20)
	for _, id := range []string{long, "cmd_\x00", "cmd_\xff"} {
		err := f.h.NodeSessions().RecordNodeJobResult(f.ctx, commands.RecordNodeJobResult{NodeID: "n1", Epoch: epoch,
			JobID: id, State: "succeeded"})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "err: %.200v", err)
		require.Less(t, len(err.Error()), 256)
		_, err = f.h.NodeSessions().RecordInstanceStopped(f.ctx, commands.RecordInstanceStopped{NodeID: "n1", Epoch: epoch,
			InstanceID: strings.Replace(id, "cmd_", "ins_", 1)})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "err: %.200v", err)
		require.Less(t, len(err.Error()), 256)
		_, err = f.h.NodeSessions().RecordInstanceStopped(f.ctx, commands.RecordInstanceStopped{NodeID: "n1", Epoch: epoch,
			InstanceID: "ins_1", AllocationID: strings.Replace(id, "cmd_", "alc_", 1)})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "err: %.200v", err)
		require.Less(t, len(err.Error()), 256)
	}
}
