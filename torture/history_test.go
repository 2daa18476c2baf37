package torture

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// The model must reject what a broken capacity core would answer, or the
// torture's "Ok" means nothing.
func TestReservationModel(t *testing.T) {
	end := Epoch.Add(time.Hour)
	booked := outcome{OK: true, State: core.ReservationBooked, Version: 1, End: end}
	created := func(h *history) { h.add(0, call{Reservation: "r", Kind: "create"}, booked, 0, 1) }
	batch := func(h *history) {
		b := booked
		b.Preemptible = true
		h.add(0, call{Reservation: "r", Kind: "create", Class: classBatch}, b, 0, 1)
	}
	preempted := func(v int64) outcome { return outcome{OK: true, State: core.ReservationPreempted, Version: v} }
	refusedPreempted := outcome{Code: core.CodeConflict, State: core.ReservationPreempted}
	released := func(v int64) outcome { return outcome{OK: true, State: core.ReservationReleased, Version: v} }
	conflict := outcome{Code: core.CodeConflict}

	for _, tc := range []struct {
		name  string
		calls func(h *history)
		want  string
	}{
		{"one release wins, the other is refused", func(h *history) {
			created(h)
			h.add(1, call{Reservation: "r", Kind: "release"}, released(2), 2, 5)
			h.add(2, call{Reservation: "r", Kind: "release"}, conflict, 3, 6)
		}, "Ok"},
		{"two releases both succeed", func(h *history) {
			created(h)
			h.add(1, call{Reservation: "r", Kind: "release"}, released(2), 2, 5)
			h.add(2, call{Reservation: "r", Kind: "release"}, released(3), 3, 6)
		}, "Illegal"},
		{"a release succeeds after the reservation was seen expired", func(h *history) {
			created(h)
			h.add(1, call{Reservation: "r", Kind: "get"}, outcome{OK: true, State: core.ReservationExpired, Version: 3}, 2, 3)
			h.add(1, call{Reservation: "r", Kind: "release"}, released(4), 4, 5)
		}, "Illegal"},
		{"a read after an extension returns the old end", func(h *history) {
			created(h)
			newEnd := end.Add(time.Hour)
			h.add(1, call{Reservation: "r", Kind: "extend", NewEnd: newEnd},
				outcome{OK: true, State: core.ReservationBooked, Version: 2, End: newEnd}, 2, 3)
			h.add(1, call{Reservation: "r", Kind: "get"}, booked, 4, 5)
		}, "Illegal"},
		{"a version goes backwards", func(h *history) {
			created(h)
			h.add(1, call{Reservation: "r", Kind: "get"}, outcome{OK: true, State: core.ReservationActive, Version: 5, End: end}, 2, 3)
			h.add(1, call{Reservation: "r", Kind: "get"}, outcome{OK: true, State: core.ReservationActive, Version: 4, End: end}, 4, 5)
		}, "Illegal"},
		{"a cancel succeeds on a booked reservation", func(h *history) {
			created(h)
			h.add(1, call{Reservation: "r", Kind: "cancel"}, outcome{OK: true, State: core.ReservationCancelled, Version: 2}, 2, 3)
		}, "Illegal"},
		{"a batch reservation is preempted while booked, seen by a read", func(h *history) {
			batch(h)
			h.add(1, call{Reservation: "r", Kind: "get"}, preempted(2), 2, 3)
			h.add(1, call{Reservation: "r", Kind: "release"}, refusedPreempted, 4, 5)
		}, "Ok"},
		{"a batch reservation is preempted once active, seen by a refused release", func(h *history) {
			batch(h)
			h.add(1, call{Reservation: "r", Kind: "get"}, outcome{OK: true, State: core.ReservationActive, Version: 2, End: end}, 2, 3)
			h.add(1, call{Reservation: "r", Kind: "release"}, refusedPreempted, 4, 5)
			h.add(1, call{Reservation: "r", Kind: "get"}, preempted(3), 6, 7)
		}, "Ok"},
		{"a standard reservation is seen preempted", func(h *history) {
			created(h)
			h.add(1, call{Reservation: "r", Kind: "get"}, preempted(2), 2, 3)
		}, "Illegal"},
		{"a prod reservation's release is refused as preempted", func(h *history) {
			h.add(0, call{Reservation: "r", Kind: "create", Class: classProd}, booked, 0, 1)
			h.add(1, call{Reservation: "r", Kind: "release"}, refusedPreempted, 2, 3)
		}, "Illegal"},
		{"a batch reservation created as not preemptible", func(h *history) {
			h.add(0, call{Reservation: "r", Kind: "create", Class: classBatch}, booked, 0, 1)
		}, "Illegal"},
		{"a preempted reservation comes back", func(h *history) {
			batch(h)
			h.add(1, call{Reservation: "r", Kind: "get"}, preempted(2), 2, 3)
			h.add(1, call{Reservation: "r", Kind: "get"}, outcome{OK: true, State: core.ReservationActive, Version: 3, End: end}, 4, 5)
		}, "Illegal"},
		{"a pending batch reservation is preempted", func(h *history) {
			p := outcome{OK: true, State: core.ReservationPending, Version: 1, End: end, Preemptible: true}
			h.add(0, call{Reservation: "r", Kind: "create", Class: classBatch}, p, 0, 1)
			h.add(1, call{Reservation: "r", Kind: "get"}, p, 2, 3)
			h.add(1, call{Reservation: "r", Kind: "get"}, preempted(3), 4, 5)
		}, "Ok"},
		{"a batch reservation is cut back by a preemptor that starts later", func(h *history) {
			batch(h)
			h.add(1, call{Reservation: "r", Kind: "get"}, outcome{OK: true, State: core.ReservationActive, Version: 3,
				End: end.Add(-time.Minute)}, 2, 3)
		}, "Ok"},
		{"a standard reservation is seen cut back", func(h *history) {
			created(h)
			h.add(1, call{Reservation: "r", Kind: "get"}, outcome{OK: true, State: core.ReservationActive, Version: 3,
				End: end.Add(-time.Minute)}, 2, 3)
		}, "Illegal"},
		{"a cut back is seen at the version it was read at", func(h *history) {
			batch(h)
			h.add(1, call{Reservation: "r", Kind: "get"}, outcome{OK: true, State: core.ReservationBooked, Version: 1,
				End: end.Add(-time.Minute)}, 2, 3)
		}, "Illegal"},
		{"a refusal names a state the reservation cannot be in", func(h *history) {
			created(h)
			h.add(1, call{Reservation: "r", Kind: "release"}, outcome{Code: core.CodeConflict, State: core.ReservationCancelled}, 2, 3)
		}, "Illegal"},
		{"the background activates and expires between calls", func(h *history) {
			created(h)
			h.add(1, call{Reservation: "r", Kind: "get"}, outcome{OK: true, State: core.ReservationActive, Version: 2, End: end}, 2, 3)
			h.add(1, call{Reservation: "r", Kind: "release"}, conflict, 4, 5)
			h.add(1, call{Reservation: "r", Kind: "get"}, outcome{OK: true, State: core.ReservationExpired, Version: 3}, 6, 7)
		}, "Ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory()
			tc.calls(h)
			require.Equal(t, tc.want, h.check(10*time.Second).Result)
		})
	}
}

// Report.Failures is the torture's verdict: each way a run can fall short
// must show.
func TestReportFailures(t *testing.T) {
	pass := Report{Ops: 100, Checks: 2, ReplanCapReached: 1, LivenessFlips: 1, Preemptions: 2, PreemptionsSeen: 1,
		History: HistoryResult{Result: "Ok"}, Outcomes: map[string]map[string]int{}}
	for _, m := range mix {
		pass.Outcomes[m.kind] = map[string]int{"ok": 1}
	}
	pass.Outcomes["create"] = map[string]int{"booked": 3, "pending": 1}
	require.Empty(t, pass.Failures())

	low := pass
	low.Outcomes = map[string]map[string]int{}
	for k, v := range pass.Outcomes {
		low.Outcomes[k] = v
	}
	low.Outcomes["create"] = map[string]int{"booked": 1, "QUOTA_EXCEEDED": 2}
	require.Contains(t, low.Failures(), "only 33% of creates booked (want at least 50%)")

	dl := pass
	dl.Deadlocks = map[string]int{"release": 1, "cordon": 4}
	require.Equal(t, []string{"1 deadlocks on the reserve/release path"}, dl.Failures())
	bg := pass
	bg.Deadlocks, bg.PreemptionDeadlocks = map[string]int{"background": 1}, 1
	require.Equal(t, []string{"1 deadlocks of a preempting transaction"}, bg.Failures(), "a background retry preempts too")

	nocap := pass
	nocap.ReplanCapReached = 0
	require.Equal(t, []string{"the replan cap was never reached"}, nocap.Failures())

	nopre := pass
	nopre.Preemptions, nopre.PreemptionsSeen = 0, 0
	require.Equal(t, []string{"no reservation was preempted"}, nopre.Failures())
	unseen := pass
	unseen.PreemptionsSeen = 0
	require.Equal(t, []string{"no call observed a preemption"}, unseen.Failures())

	bad := pass
	bad.History.Result = "Illegal"
	require.Equal(t, 1, bad.ViolationCount())
	require.Contains(t, bad.Failures(), "reservation histories: Illegal")
}

// A refusal is an observation of the state it names only through
// core.CheckTransition's message: if that changes, the torture would stop
// seeing preemptions in refusals, and this fails first.
func TestRefusedIn(t *testing.T) {
	err := core.CheckTransition(core.ReservationStateTable(), core.ReservationPreempted, core.ReservationReleased)
	require.Equal(t, core.ReservationPreempted, refusedIn(fmt.Errorf("reservations.release r: %w", err)))
	err = core.CheckTransition(core.ReservationStateTable(), core.ReservationPreempted, core.ReservationPreempted)
	require.Equal(t, core.ReservationPreempted, refusedIn(err), "an extension's check")
	require.Equal(t, core.ReservationActive, refusedIn(core.Errorf(core.CodeConflict,
		"reservation rsv_01a2 is active and cannot become cancelled: cancel withdraws a pending reservation; release a booked or active one")),
		"a cancel's refusal (commands.endReservationWith)")
	require.Empty(t, refusedIn(core.Errorf(core.CodeConflict, "reservation r was changed concurrently")))
	require.Empty(t, refusedIn(core.Errorf(core.CodeNotFound, "reservation is preempted and cannot become released")))
}
