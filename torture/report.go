package torture

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/invariants"
)

// Report is what a run found.
type Report struct {
	Ops int
	// Database names the scratch database left behind (Options.Keep).
	Database string
	// Outcomes counts, by operation kind, each outcome: "ok", a create's
	// "booked" or "pending", or a refusal's code.
	Outcomes map[string]map[string]int
	// Checks is how many times every invariant was checked.
	Checks int
	// Deadlocks counts the statements PostgreSQL aborted as deadlocked, by
	// operation kind ("background" for the reconcilers).
	Deadlocks map[string]int
	// DeadlockSamples are PostgreSQL's accounts of the first deadlocks,
	// with the statements each process's transaction had run.
	DeadlockSamples []string
	// PreemptionDeadlocks counts the deadlocks a preempting transaction
	// took part in, whatever the operation (a create, a retry, the
	// background's retry of a pending reservation): there must be none.
	PreemptionDeadlocks int
	// ReplanCapReached counts placements that stopped replanning because
	// they lost PlacementAttempts races.
	ReplanCapReached int
	// LivenessFlips counts nodes declared unreachable.
	LivenessFlips int
	History       HistoryResult
	Violations    []invariants.Violation

	// Preemptions counts the reservations preempted (reservation.preempted
	// events); PreemptionsSeen the calls that observed one preempted: a
	// read answering it, or a release, cancel or extension refused
	// because of it.
	Preemptions, PreemptionsSeen int
	// CutBacks counts the reservations cut back by a preemptor that
	// starts later (reservation.shortened events).
	CutBacks int
}

// Creates is how many creates ran and BookedShare the share of them that
// booked at once.
func (r Report) Creates() int { return sum(r.Outcomes["create"]) }

func (r Report) BookedShare() float64 {
	if r.Creates() == 0 {
		return 0
	}
	return float64(r.Outcomes["create"][string(core.ReservationBooked)]) / float64(r.Creates())
}

// ReserveReleaseDeadlocks is the deadlocks on the reserve/release path.
func (r Report) ReserveReleaseDeadlocks() int {
	n := 0
	for k, v := range r.Deadlocks {
		if reserveRelease[k] {
			n += v
		}
	}
	return n
}

// ViolationCount is the number the last line reports: every broken
// invariant, plus one for a history that is not linearizable.
func (r Report) ViolationCount() int {
	n := len(r.Violations)
	if r.History.Result == "Illegal" {
		n++
	}
	return n
}

// MinBookedShare is the least share of creates that must book: below it
// the run mostly tested refusals.
const MinBookedShare = 0.5

// Failures lists why the run does not pass: a violation, a history porcupine
// could not linearize or check, or a run that did not exercise what it
// claims (too few creates booked, the replan cap never reached, no liveness
// flip, no preemption or none the clients saw, too few checks), or a
// deadlock on the reserve/release path or of a preempting transaction.
func (r Report) Failures() []string {
	var out []string
	if n := r.ViolationCount(); n > 0 {
		out = append(out, fmt.Sprintf("%d violations", n))
	}
	if r.History.Result != "Ok" {
		out = append(out, "reservation histories: "+r.History.Result)
	}
	if s := r.BookedShare(); s < MinBookedShare {
		out = append(out, fmt.Sprintf("only %.0f%% of creates booked (want at least %.0f%%)", 100*s, 100*MinBookedShare))
	}
	if n := r.ReserveReleaseDeadlocks(); n > 0 {
		out = append(out, fmt.Sprintf("%d deadlocks on the reserve/release path", n))
	}
	if r.PreemptionDeadlocks > 0 {
		out = append(out, fmt.Sprintf("%d deadlocks of a preempting transaction", r.PreemptionDeadlocks))
	}
	if r.ReplanCapReached == 0 {
		out = append(out, "the replan cap was never reached")
	}
	if r.LivenessFlips <= 0 {
		out = append(out, "no node became unreachable")
	}
	if r.Preemptions <= 0 {
		out = append(out, "no reservation was preempted")
	} else if r.PreemptionsSeen <= 0 {
		out = append(out, "no call observed a preemption")
	}
	if r.Checks < 2 {
		out = append(out, fmt.Sprintf("invariants checked only %d times", r.Checks))
	}
	for _, m := range mix {
		if sum(r.Outcomes[m.kind]) == 0 {
			out = append(out, "no "+m.kind+" ran")
		}
	}
	return out
}

// Write prints the report: outcomes by kind, the headline figures, every
// violation, and last the line `torture: N ops, V violations`.
func (r Report) Write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "kind\truns\toutcomes")
	line := func(kind string, o map[string]int) {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(o)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, o[k]))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", kind, sum(o), strings.Join(parts, ", "))
	}
	for _, m := range mix {
		line(m.kind, r.Outcomes[m.kind])
	}
	if o := r.Outcomes["read back"]; len(o) > 0 { // runOn's readBack, after the operations
		line("read back", o)
	}
	tw.Flush()
	fmt.Fprintf(w, "creates booked: %.1f%% of %d\n", 100*r.BookedShare(), r.Creates())
	var dl []string
	for _, k := range slices.Sorted(maps.Keys(r.Deadlocks)) {
		dl = append(dl, fmt.Sprintf("%s %d", k, r.Deadlocks[k]))
	}
	fmt.Fprintf(w, "deadlocks (40P01): %d on reserve/release, %d of a preempting transaction; all: %s\n",
		r.ReserveReleaseDeadlocks(), r.PreemptionDeadlocks, orNone(dl))
	for _, s := range r.DeadlockSamples {
		fmt.Fprintln(w, "deadlock in", s)
	}
	fmt.Fprintf(w, "replan cap reached: %d times\n", r.ReplanCapReached)
	fmt.Fprintf(w, "nodes declared unreachable: %d\n", r.LivenessFlips)
	fmt.Fprintf(w, "preemptions: %d, observed by %d calls; cut back by a later preemptor: %d\n", r.Preemptions, r.PreemptionsSeen,
		r.CutBacks)
	fmt.Fprintf(w, "invariant checks: %d\n", r.Checks)
	fmt.Fprintf(w, "reservation histories: %s (%d reservations, %d calls)\n", r.History.Result, r.History.Reservations, r.History.Calls)
	if r.History.Illegal != "" {
		fmt.Fprintln(w, "not linearizable:", r.History.Illegal)
	}
	for _, v := range r.Violations {
		fmt.Fprintln(w, "VIOLATION", v)
	}
	if r.Database != "" {
		fmt.Fprintln(w, "scratch database kept:", r.Database)
	}
	for _, f := range r.Failures() {
		fmt.Fprintln(w, "FAIL", f)
	}
	fmt.Fprintf(w, "torture: %d ops, %d violations\n", r.Ops, r.ViolationCount())
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
