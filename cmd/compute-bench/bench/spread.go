package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
)

// Spread reads the results of several runs (bench/results/*.json) and
// writes every headline ratio and the write path's key figures as median
// [min–max] over the runs, so a figure is quoted with how much it moves
// between runs of the same code on the same machine. A figure missing from
// some runs is shown over the runs that have it, with their count.
func Spread(w io.Writer, paths []string) error {
	if len(paths) == 0 {
		return fmt.Errorf("--spread needs result files (bench/results/*.json)")
	}
	runs := make([]*Results, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		r := &Results{}
		if err := json.Unmarshal(b, r); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		runs = append(runs, r)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "FIGURE (%d runs)\tMEDIAN\tMIN\tMAX\tRUNS\n", len(runs))
	for _, f := range spreadFigures(runs) {
		var vs []float64
		for _, r := range runs {
			if v, ok := f.of(r); ok {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			continue
		}
		slices.Sort(vs)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", f.name, fmtFigure(median(vs)), fmtFigure(vs[0]), fmtFigure(vs[len(vs)-1]), len(vs))
	}
	return tw.Flush()
}

// spreadFigure is one row of Spread: a name and how to read it from a run.
type spreadFigure struct {
	name string
	of   func(*Results) (float64, bool)
}

// spreadFigures lists the ratios (in the first run's order, then any only
// later runs have), then per load run its throughput, round trips and CPU,
// then the pipeline's webhook latency and placement by fleet size.
func spreadFigures(runs []*Results) []spreadFigure {
	var out []spreadFigure
	seen := map[string]bool{}
	add := func(name string, of func(*Results) (float64, bool)) {
		if !seen[name] {
			seen[name] = true
			out = append(out, spreadFigure{name: name, of: of})
		}
	}
	for _, r := range runs {
		for _, ratio := range r.Ratios {
			name := ratio.Name
			add(name, func(r *Results) (float64, bool) {
				for _, x := range r.Ratios {
					if x.Name == name {
						return x.Value, true
					}
				}
				return 0, false
			})
		}
	}
	for _, r := range runs {
		for _, l := range r.Reservations {
			name := l.Name
			load := func(v func(LoadRun) float64) func(*Results) (float64, bool) {
				return func(r *Results) (float64, bool) {
					l, ok := r.load(name)
					return v(l), ok
				}
			}
			add(name+": reservations/s", load(func(l LoadRun) float64 { return l.PerSec }))
			add(name+": round trips per create", load(func(l LoadRun) float64 { return l.RoundTripsPerCreate }))
			add(name+": round trips per release", load(func(l LoadRun) float64 { return l.RoundTripsPerRelease }))
			add(name+": CPU ms per reservation", load(func(l LoadRun) float64 { return l.GoCPUMsPerReservation + l.ServerCPUMsPerReservation }))
			add(name+": CPU ms per reservation, PostgreSQL", load(func(l LoadRun) float64 { return l.ServerCPUMsPerReservation }))
			add(name+": CPU busy, % of all cores", func(r *Results) (float64, bool) {
				l, ok := r.load(name)
				return l.CPUBusyPercent, ok && l.CPUBusyPercent > 0 // runs before the figure existed have 0
			})
		}
		for _, p := range r.Pgbench {
			name := p.Name()
			add(name+": tps", func(r *Results) (float64, bool) {
				for _, x := range r.Pgbench {
					if x.Name() == name {
						return x.TPS, true
					}
				}
				return 0, false
			})
		}
		for _, s := range r.Scale {
			nodes := s.Nodes
			add(fmt.Sprintf("placement p50 ms, %d nodes", nodes), func(r *Results) (float64, bool) {
				for _, x := range r.Scale {
					if x.Nodes == nodes {
						return x.P50Ms, true
					}
				}
				return 0, false
			})
		}
	}
	pipeline := func(v func(PipelineResult) float64) func(*Results) (float64, bool) {
		return func(r *Results) (float64, bool) { return v(r.Pipeline), r.Pipeline.Load.PerSec > 0 }
	}
	add("webhook commit → delivery p50 ms", pipeline(func(p PipelineResult) float64 { return p.DeliveryP50Ms }))
	add("webhook commit → delivery p99 ms", pipeline(func(p PipelineResult) float64 { return p.DeliveryP99Ms }))
	add("pipeline HTTP reservations/s", pipeline(func(p PipelineResult) float64 { return p.Load.PerSec }))
	return out
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// fmtFigure prints ratios with three decimals and larger figures with
// fewer.
func fmtFigure(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3f", v)
}
