package core

import (
	"fmt"
	"sort"
)

// State is one state of a state machine (a reservation, a provision, a
// command). The empty State is "does not exist yet": a transition from it is
// a creation.
type State string

// StateNone is the state of a record that does not exist yet.
const StateNone State = ""

// StateTable says which transitions of one state machine are legal, as data:
// handlers ask it instead of encoding rules in if-statements, so the rules
// live in one place and a table test can cover every pair.
type StateTable struct {
	// Name names the machine in error messages ("reservation").
	Name string
	// States lists every state, StateNone excluded.
	States []State
	// Terminal states allow no transition out.
	Terminal map[State]bool
	// Next maps a state to the states it may move to. A state listed as its
	// own successor may be modified without changing state (an extension).
	Next map[State][]State
}

// Allows reports whether from → to is legal in t.
func (t StateTable) Allows(from, to State) bool {
	for _, s := range t.Next[from] {
		if s == to {
			return true
		}
	}
	return false
}

// CheckTransition returns nil when from → to is legal in table and a CONFLICT
// error naming both states otherwise: the caller asked for something the
// record's current state does not permit.
func CheckTransition(table StateTable, from, to State) error {
	if table.Allows(from, to) {
		return nil
	}
	if from == StateNone {
		return Errorf(CodeConflict, "a %s cannot be created %s", table.Name, to)
	}
	return Errorf(CodeConflict, "%s is %s and cannot become %s", table.Name, from, to)
}

// Validate checks that the table is well formed: every state mentioned is
// declared and terminal states have no successors. Tests call it.
func (t StateTable) Validate() error {
	known := map[State]bool{StateNone: true}
	for _, s := range t.States {
		known[s] = true
	}
	froms := make([]string, 0, len(t.Next))
	for from := range t.Next {
		froms = append(froms, string(from))
	}
	sort.Strings(froms)
	for _, f := range froms {
		from := State(f)
		if !known[from] {
			return fmt.Errorf("%s: unknown state %q", t.Name, from)
		}
		if t.Terminal[from] && len(t.Next[from]) > 0 {
			return fmt.Errorf("%s: terminal state %q has successors", t.Name, from)
		}
		for _, to := range t.Next[from] {
			if !known[to] || to == StateNone {
				return fmt.Errorf("%s: %q -> unknown state %q", t.Name, from, to)
			}
		}
	}
	return nil
}
