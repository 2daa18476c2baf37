package bench

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// printTable writes the human summary: ratios first (the figures to quote),
// then the raw measurements they were computed from, then the gaps.
func (r *Results) printTable(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "compute-bench %s (quick=%v) — %d cores, %s/%s, PostgreSQL %s, fsync=%s synchronous_commit=%s\n\n",
		r.Date, r.Quick, m.Cores, m.GOOS, m.GOARCH, m.PGVersion, m.Settings["fsync"], m.Settings["synchronous_commit"])
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RATIO\tVALUE\tNUMERATOR\tDENOMINATOR")
	for _, x := range r.Ratios {
		fmt.Fprintf(tw, "%s\t%.3f\t%s\t%s\n", x.Name, x.Value, x.Numerator, x.Denominator)
	}
	tw.Flush()

	r.printWritePath(w)

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PGBENCH\tTPS\tLATENCY AVG ms")
	for _, p := range r.Pgbench {
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\n", p.Name(), p.TPS, p.LatencyMs)
	}
	tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESERVATIONS\tNODES\tRES/s\tp50 ms\tp99 ms\tBOOKED\tPENDING\tERRORS\tRETRIES/1k\t40P01/1k\tMXACT/RES")
	for _, l := range r.Reservations {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f\t%d\t%d\t%s\t%.1f\t%.1f\t%.2f\n", l.Name, l.Nodes, l.PerSec, l.P50Ms, l.P99Ms,
			l.Booked, l.Pending, errorsString(l.Errors), l.RetriesPer1000, l.DeadlocksPer1000, l.MultixactsPerReservation)
	}
	tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCALE (site-wide placement, 1 client)\tREQUESTS\tp50 ms\tp99 ms\tSEEDED nodes/s")
	for _, s := range r.Scale {
		fmt.Fprintf(tw, "%d nodes\t%d\t%.2f\t%.2f\t%.0f\n", s.Nodes, s.Requests, s.P50Ms, s.P99Ms, s.SeedNodesPerSec)
	}
	tw.Flush()

	o := r.Outbox
	fmt.Fprintf(w, "\nOUTBOX  commit → reader (poll %.0f ms) at %d/s target, %.0f/s achieved: p50 %.2f ms, p99 %.2f ms (%d/%d events seen)\n",
		o.PollMs, o.TargetRate, o.AchievedRate, o.P50Ms, o.P99Ms, o.Seen, o.Events)
	fmt.Fprintf(w, "        writer (unpaced, 8 writers, 1 event/tx) %.0f events/s (%.0f without the notifier); reader drain %.0f events/s\n",
		o.WriterPerSec, o.WriterNoNotifyPerSec, o.ReaderPerSec)
	for _, b := range o.Backlogs {
		fmt.Fprintf(w, "        ReadAfter(100) from the middle of %d events: p50 %.3f ms, p99 %.3f ms\n", b.Events, b.P50Ms, b.P99Ms)
	}

	r.Pipeline.print(w)
	r.APIScale.print(w)
	r.SSE.print(w)
	r.NATS.print(w)
	r.Replica.print(w)

	fmt.Fprintln(w, "\nNOT MEASURED")
	for _, g := range r.NotMeasured {
		fmt.Fprintf(w, "  - %s: %s\n", g.What, firstLine(g.Why))
	}
}

// printWritePath is what one reservation asks of PostgreSQL and costs in
// CPU, from each in-process run: the rows issue 15 names.
func (r *Results) printWritePath(w io.Writer) {
	if len(r.Reservations) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprint(tw, "WRITE PATH (in-process)")
	for _, l := range r.Reservations {
		fmt.Fprintf(tw, "\t%s", l.Name)
	}
	fmt.Fprintln(tw)
	row := func(name, format string, v func(LoadRun) float64) {
		fmt.Fprint(tw, name)
		for _, l := range r.Reservations {
			fmt.Fprintf(tw, "\t"+format, v(l))
		}
		fmt.Fprintln(tw)
	}
	row("reservations/s", "%.0f", func(l LoadRun) float64 { return l.PerSec })
	row("database connections (the API's pool)", "%.0f", func(l LoadRun) float64 { return float64(l.MaxConns) })
	row("round trips per create", "%.2f", func(l LoadRun) float64 { return l.RoundTripsPerCreate })
	row("round trips per release", "%.2f", func(l LoadRun) float64 { return l.RoundTripsPerRelease })
	row("statements per create", "%.2f", func(l LoadRun) float64 { return l.StatementsPerCreate })
	row("statements per release", "%.2f", func(l LoadRun) float64 { return l.StatementsPerRelease })
	row("statements per reservation (tracer)", "%.2f", func(l LoadRun) float64 { return l.StatementsPerReservation })
	row("statements per reservation (pg_stat_statements)", "%.2f", func(l LoadRun) float64 { return l.StatementsPerReservationPGSS })
	row("CPU ms per reservation", "%.2f", func(l LoadRun) float64 { return l.GoCPUMsPerReservation + l.ServerCPUMsPerReservation })
	row("  of which Go process", "%.2f", func(l LoadRun) float64 { return l.GoCPUMsPerReservation })
	row("  of which PostgreSQL", "%.2f", func(l LoadRun) float64 { return l.ServerCPUMsPerReservation })
	row("CPU busy, % of all cores", "%.0f", func(l LoadRun) float64 { return l.CPUBusyPercent })
	tw.Flush()
	l := r.Reservations[0]
	if len(l.TopStatements) == 0 {
		return
	}
	fmt.Fprintf(w, "\nSERVER EXECUTION TIME BY STATEMENT (%s, pg_stat_statements)\n", l.Name)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATEMENT\tCALLS/RES\tMEAN ms\tSHARE")
	for _, s := range l.TopStatements {
		fmt.Fprintf(tw, "%s\t%.2f\t%.3f\t%.0f %%\n", s.Name, float64(s.Calls)/float64(max(l.Booked, 1)), s.MeanMs, 100*s.ShareOfExec)
	}
	tw.Flush()
}

func errorsString(m map[string]int64) string {
	if len(m) == 0 {
		return "0"
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
