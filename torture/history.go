package torture

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/bettercompute/compute/core"
)

// A reservation's history is every call the torture made on it (create,
// get, extend, release, cancel), each with its call and return instants and
// its outcome. Porcupine checks that the outcomes of each reservation's
// calls could have happened in some order that respects real time and the
// reservation's lifecycle: no two releases both succeed, nothing succeeds on
// a reservation seen ended, versions only grow, an extension is what a later
// read returns, and only a reservation of a preemptible class is ever seen
// preempted. Reservations are independent, so each is its own partition.

// call is what the torture asked of a reservation.
type call struct {
	Reservation string
	Kind        string    // create, get, extend, release, cancel
	NewEnd      time.Time // extend only
	Class       string    // create only: the priority class asked for
}

// outcome is what the call answered. OK false means a domain refusal (a
// code in Code); calls that ended in an internal error are not recorded.
// A refusal's State is the state it named ("reservation is preempted and
// cannot become released"), "" when it named none.
type outcome struct {
	OK          bool
	Code        core.Code
	State       core.State
	Version     int64
	End         time.Time
	Preemptible bool // create only: the flag the reservation copied
}

// resState is the model's state of one reservation: its lifecycle state, a
// lower bound of its version, its end while it is live, and whether its
// class is preemptible (as the client chose it).
type resState struct {
	State       core.State
	Version     int64
	End         time.Time
	Preemptible bool
}

// background lists the transitions the system makes on its own, outside any
// call the torture records: placement of a pending reservation, activation,
// expiry, and failure (a node lost, an assignment refused). Release and
// cancel happen only by a call. Preemption, by another reservation's
// create or retry, is background too, but only for a preemptible
// reservation (successors).
var background = map[core.State][]core.State{
	core.ReservationPending: {core.ReservationBooked, core.ReservationExpired, core.ReservationFailed},
	core.ReservationBooked:  {core.ReservationActive, core.ReservationExpired, core.ReservationFailed},
	core.ReservationActive:  {core.ReservationExpired, core.ReservationFailed},
}

// successors are the states the background can move s to in one step:
// booked and active reservations of a preemptible class may also be
// preempted (docs/concepts/priority.md).
func successors(s resState) []core.State {
	next := background[s.State]
	if s.Preemptible && releasable(s.State) {
		next = append(slices.Clip(next), core.ReservationPreempted)
	}
	return next
}

// reachable is s and every state the background can move it to, each with
// the least version it can have there (every transition bumps the version).
func reachable(s resState) []resState {
	out := []resState{s}
	for i := 0; i < len(out); i++ {
		for _, next := range successors(out[i]) {
			if !slices.ContainsFunc(out, func(x resState) bool { return x.State == next }) {
				x := out[i]
				x.State, x.Version = next, x.Version+1
				out = append(out, x)
			}
		}
	}
	return out
}

// cutBack says whether out can be c after a preemptor that starts later
// cut it back (docs/concepts/priority.md): a booked or active reservation
// of a preemptible class, seen at a newer version with an earlier end.
func cutBack(c resState, out outcome) bool {
	return c.Preemptible && releasable(c.State) && out.Version > c.Version && out.End.Before(c.End)
}

// releasable are the states a release succeeds from; cancel succeeds from
// pending only.
func releasable(s core.State) bool {
	return s == core.ReservationBooked || s == core.ReservationActive
}

// step is the model: every state the reservation can be in after the call
// answered out, given it was in s before (none when the answer is
// impossible).
func step(s resState, in call, out outcome) []resState {
	if in.Kind == "create" {
		p := preemptibleClass(in.Class)
		if s.State != core.StateNone || !out.OK || (out.State != core.ReservationPending && out.State != core.ReservationBooked) ||
			out.Preemptible != p {
			return nil
		}
		return []resState{{State: out.State, Version: out.Version, End: out.End, Preemptible: p}}
	}
	var next []resState
	add := func(x resState) {
		if !slices.Contains(next, x) {
			next = append(next, x)
		}
	}
	for _, c := range reachable(s) {
		if c.State == core.StateNone {
			continue
		}
		if !out.OK && out.State != "" && out.State != c.State {
			continue // the refusal named another state
		}
		switch {
		case !out.OK && in.Kind == "release":
			if !releasable(c.State) {
				add(c)
			}
		case !out.OK && in.Kind == "cancel":
			if c.State != core.ReservationPending {
				add(c)
			}
		case !out.OK:
			// An extension can be refused in any state (capacity, quota);
			// a read of a reservation the caller created is never refused.
			if in.Kind == "extend" {
				add(c)
			}
		case in.Kind == "get":
			if out.State == c.State && out.Version >= c.Version &&
				(!core.ReservationHoldsQuota(c.State) || out.End.Equal(c.End) || cutBack(c, out)) {
				add(resState{State: out.State, Version: out.Version, End: out.End, Preemptible: c.Preemptible})
			}
		case in.Kind == "extend":
			if out.State == c.State && core.ReservationHoldsQuota(c.State) && out.Version > c.Version && out.End.Equal(in.NewEnd) {
				add(resState{State: out.State, Version: out.Version, End: out.End, Preemptible: c.Preemptible})
			}
		case in.Kind == "release":
			if releasable(c.State) && out.State == core.ReservationReleased && out.Version > c.Version {
				add(resState{State: out.State, Version: out.Version, Preemptible: c.Preemptible})
			}
		case in.Kind == "cancel":
			if c.State == core.ReservationPending && out.State == core.ReservationCancelled && out.Version > c.Version {
				add(resState{State: out.State, Version: out.Version, Preemptible: c.Preemptible})
			}
		}
	}
	return next
}

// reservationModel is step as a porcupine model, partitioned by reservation.
var reservationModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byID := map[string][]porcupine.Operation{}
		var ids []string
		for _, op := range h {
			id := op.Input.(call).Reservation
			if _, ok := byID[id]; !ok {
				ids = append(ids, id)
			}
			byID[id] = append(byID[id], op)
		}
		out := make([][]porcupine.Operation, 0, len(ids))
		for _, id := range ids {
			out = append(out, byID[id])
		}
		return out
	},
	Init: func() []any { return []any{resState{}} },
	Step: func(s, in, out any) []any {
		next := step(s.(resState), in.(call), out.(outcome))
		res := make([]any, len(next))
		for i, n := range next {
			res[i] = n
		}
		return res
	},
	Equal: func(a, b any) bool { return a.(resState) == b.(resState) },
	DescribeOperation: func(in, out any) string {
		return fmt.Sprintf("%+v -> %+v", in, out)
	},
}

// history records calls from many goroutines. Instants come from one
// monotonic clock, so real-time order is kept across goroutines.
type history struct {
	mu    sync.Mutex
	start time.Time
	ops   []porcupine.Operation
}

func newHistory() *history { return &history{start: time.Now()} }

// now is the instant for a call or a return.
func (h *history) now() int64 { return int64(time.Since(h.start)) }

// add records one finished call.
func (h *history) add(client int, in call, out outcome, called, returned int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: called, Return: returned})
}

// HistoryResult is porcupine's verdict on the recorded histories.
type HistoryResult struct {
	// Reservations and Calls are how much was checked.
	Reservations, Calls int
	// Result is porcupine's answer: "Ok", "Illegal" or "Unknown" (timed out).
	Result string
	// Illegal describes the first illegal partition, when Result is Illegal.
	Illegal string
}

// check runs porcupine over everything recorded.
func (h *history) check(timeout time.Duration) HistoryResult {
	h.mu.Lock()
	ops := slices.Clone(h.ops)
	h.mu.Unlock()
	res := HistoryResult{Calls: len(ops), Result: "Ok"}
	parts := reservationModel.Partition(ops)
	res.Reservations = len(parts)
	model := reservationModel.ToModel()
	switch r, _ := porcupine.CheckOperationsVerbose(model, ops, timeout); r {
	case porcupine.Illegal:
		res.Result = "Illegal"
		res.Illegal = describeIllegal(parts, model)
	case porcupine.Unknown:
		res.Result = "Unknown"
	}
	return res
}

// describeIllegal names the first reservation whose history alone is not
// linearizable, with its calls in call order.
func describeIllegal(parts [][]porcupine.Operation, model porcupine.Model) string {
	for _, p := range parts {
		if porcupine.CheckOperations(model, p) {
			continue
		}
		slices.SortFunc(p, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		s := "reservation " + p[0].Input.(call).Reservation + ":"
		for _, op := range p {
			s += fmt.Sprintf("\n  [%d,%d] %s", op.Call, op.Return, model.DescribeOperation(op.Input, op.Output))
		}
		return s
	}
	return ""
}
