package core

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStatePath(t *testing.T) {
	t.Parallel()
	table := CommandStateTable()
	for name, tc := range map[string]struct {
		from, to State
		want     []State
	}{
		"one step":         {CommandSent, CommandRunning, []State{CommandRunning}},
		"catch up":         {CommandSent, CommandSucceeded, []State{CommandRunning, CommandSucceeded}},
		"from queued":      {CommandQueued, CommandSucceeded, []State{CommandSent, CommandRunning, CommandSucceeded}},
		"direct failure":   {CommandSent, CommandFailed, []State{CommandFailed}},
		"same state":       {CommandRunning, CommandRunning, nil},
		"terminal":         {CommandFailed, CommandSucceeded, nil},
		"unreachable back": {CommandRunning, CommandQueued, nil},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, StatePath(table, tc.from, tc.to))
		})
	}
}
