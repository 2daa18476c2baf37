package core

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// legal lists every legal transition of each table, written out by hand so
// that a change to a table must change this test too.
var legal = map[string][][2]State{
	"reservation": {
		{StateNone, ReservationPending}, {StateNone, ReservationBooked},
		{ReservationPending, ReservationPending},
		{ReservationPending, ReservationBooked}, {ReservationPending, ReservationCancelled},
		{ReservationPending, ReservationExpired}, {ReservationPending, ReservationFailed},
		{ReservationBooked, ReservationBooked}, {ReservationBooked, ReservationActive},
		{ReservationBooked, ReservationReleased}, {ReservationBooked, ReservationExpired},
		{ReservationBooked, ReservationFailed}, {ReservationBooked, ReservationPreempted},
		{ReservationActive, ReservationActive}, {ReservationActive, ReservationReleased},
		{ReservationActive, ReservationExpired}, {ReservationActive, ReservationFailed},
		{ReservationActive, ReservationPreempted},
	},
	"provision": {
		{StateNone, ProvisionRequested},
		{ProvisionRequested, ProvisionProvisioning}, {ProvisionRequested, ProvisionStopping},
		{ProvisionRequested, ProvisionFailed},
		{ProvisionProvisioning, ProvisionRunning}, {ProvisionProvisioning, ProvisionStopping},
		{ProvisionProvisioning, ProvisionFailed}, {ProvisionProvisioning, ProvisionSucceeded},
		{ProvisionRunning, ProvisionStopping}, {ProvisionRunning, ProvisionFailed}, {ProvisionRunning, ProvisionSucceeded},
		{ProvisionStopping, ProvisionStopped}, {ProvisionStopping, ProvisionFailed},
	},
	"command": {
		{StateNone, CommandQueued},
		{CommandQueued, CommandSent}, {CommandQueued, CommandCancelled}, {CommandQueued, CommandTimedOut},
		{CommandSent, CommandQueued}, {CommandSent, CommandRunning}, {CommandSent, CommandFailed},
		{CommandSent, CommandCancelled}, {CommandSent, CommandTimedOut},
		{CommandRunning, CommandSucceeded}, {CommandRunning, CommandFailed}, {CommandRunning, CommandTimedOut},
	},
}

// TestStateTablesEveryPair checks every (from, to) pair over all states,
// StateNone included, against the hand-written list of legal pairs.
func TestStateTablesEveryPair(t *testing.T) {
	t.Parallel()
	for _, table := range []StateTable{ReservationStateTable(), ProvisionStateTable(), CommandStateTable()} {
		t.Run(table.Name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, table.Validate())
			want := map[[2]State]bool{}
			for _, p := range legal[table.Name] {
				want[p] = true
			}
			all := append([]State{StateNone}, table.States...)
			seen := 0
			for _, from := range all {
				for _, to := range all {
					err := CheckTransition(table, from, to)
					if want[[2]State{from, to}] {
						seen++
						require.NoError(t, err, "%s: %q -> %q should be legal", table.Name, from, to)
						continue
					}
					require.Error(t, err, "%s: %q -> %q should be illegal", table.Name, from, to)
					require.Equal(t, CodeConflict, CodeOf(err))
				}
			}
			require.Equal(t, len(legal[table.Name]), seen, "every listed pair is a pair of declared states")
		})
	}
}

func TestTerminalStatesHaveNoWayOut(t *testing.T) {
	t.Parallel()
	for _, table := range []StateTable{ReservationStateTable(), ProvisionStateTable(), CommandStateTable()} {
		for s := range table.Terminal {
			require.Empty(t, table.Next[s], "%s: %s is terminal", table.Name, s)
		}
	}
}

func TestValidateRejectsUnknownState(t *testing.T) {
	t.Parallel()
	bad := StateTable{Name: "bad", States: []State{"a"}, Next: map[State][]State{"a": {"b"}}}
	require.Error(t, bad.Validate())
	term := StateTable{Name: "term", States: []State{"a", "b"}, Terminal: map[State]bool{"b": true},
		Next: map[State][]State{"a": {"b"}, "b": {"a"}}}
	require.Error(t, term.Validate())
}
