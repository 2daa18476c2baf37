package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

func TestNodeLivenessTable(t *testing.T) {
	t.Parallel()
	tbl := core.NodeLivenessTable()
	require.NoError(t, tbl.Validate())
	for _, tc := range []struct {
		from, to core.State
		ok       bool
	}{
		{core.NodeConnected, core.NodeDisconnected, true},
		{core.NodeDisconnected, core.NodeUnreachable, true},
		{core.NodeRegistered, core.NodeUnreachable, true},
		{core.NodeUnreachable, core.NodeLost, true},
		{core.NodeLost, core.NodeConnected, true},
		{core.NodeConnected, core.NodeUnreachable, false}, // always through disconnected
		{core.NodeDisconnected, core.NodeLost, false},     // always through unreachable
		{core.NodeRetired, core.NodeConnected, false},     // terminal
	} {
		require.Equal(t, tc.ok, tbl.Allows(tc.from, tc.to), "%s -> %s", tc.from, tc.to)
	}
}
