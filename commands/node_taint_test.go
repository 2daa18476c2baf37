package commands_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// Untaint by key alone removes every taint of that key, valued or not;
// by KEY=VALUE that taint only; a taint the node does not have changes
// nothing. Before, `untaint n1 gpu` on a node tainted gpu=reserved
// answered the node unchanged and an operator took the taint for gone.
func TestUntaintByKeyRemovesEveryTaintOfTheKey(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	for _, taint := range []string{"gpu=reserved", "gpu=other", "gpu", "gpus=x", "maintenance"} {
		_, err := f.h.TaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: taint})
		require.NoError(t, err)
	}
	res, err := f.h.UntaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: "maintenance=x"})
	require.NoError(t, err)
	require.Equal(t, []string{"gpu", "gpu=other", "gpu=reserved", "gpus=x", "maintenance"}, res.Taints, "a value the taint lacks matches nothing")
	before := f.countEvents(t, core.EventNodeUntainted)

	res, err = f.h.UntaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: "gpu"})
	require.NoError(t, err)
	require.Equal(t, []string{"gpus=x", "maintenance"}, res.Taints, "every taint of key gpu, and no other key")
	require.Equal(t, before+1, f.countEvents(t, core.EventNodeUntainted), "one change, one event")

	res, err = f.h.UntaintNode(f.ctx, operator, commands.TaintNode{NodeID: "n1", Taint: "gpus=x"})
	require.NoError(t, err)
	require.Equal(t, []string{"maintenance"}, res.Taints)
}
