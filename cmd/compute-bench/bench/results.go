package bench

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Results is everything one run measured, written as bench/results/<date>.json.
type Results struct {
	Date         string         `json:"date"`
	Quick        bool           `json:"quick"`
	Command      string         `json:"command"`
	Machine      Machine        `json:"machine"`
	Pgbench      []PgbenchRun   `json:"pgbench"`
	Reservations []LoadRun      `json:"reservations"`
	Scale        []ScalePoint   `json:"scale"`
	Outbox       OutboxResult   `json:"outbox"`
	SSE          SSEResult      `json:"sse"`
	Pipeline     PipelineResult `json:"pipeline"`
	APIScale     APIScaleResult `json:"apiProcesses"`
	NATS         NATSResult     `json:"nats"`
	Replica      ReplicaResult  `json:"replica"`
	Ratios       []Ratio        `json:"ratios"`
	NotMeasured  []Gap          `json:"notMeasured"`
	Plan         planSummary    `json:"plan"`
	started      time.Time
}

// Machine is what the figures were measured on.
type Machine struct {
	Cores          int               `json:"cores"`
	GOOS           string            `json:"goos"`
	GOARCH         string            `json:"goarch"`
	GoVersion      string            `json:"goVersion"`
	Hostname       string            `json:"hostname"`
	PGVersion      string            `json:"postgresVersion"`
	PrivateCluster bool              `json:"privateCluster"`
	Settings       map[string]string `json:"settings"`
}

// Ratio is a headline figure: two measurements of the same run divided.
type Ratio struct {
	Name        string  `json:"name"`
	Value       float64 `json:"value"`
	Numerator   string  `json:"numerator"`
	Denominator string  `json:"denominator"`
}

// Gap is something the issue asks for that this run did not measure, and
// why. Failed marks a measurement that was attempted and returned an error
// (as opposed to one a quick run leaves out by design); `compute-bench
// --strict` exits non-zero when there is one, which is how CI notices a
// broken measurement.
type Gap struct {
	What   string `json:"what"`
	Why    string `json:"why"`
	Failed bool   `json:"failed,omitempty"`
}

// Failures are the measurements that were attempted and failed.
func (r *Results) Failures() []Gap {
	var out []Gap
	for _, g := range r.NotMeasured {
		if g.Failed {
			out = append(out, g)
		}
	}
	return out
}

// planSummary records the sizes the run used, so a reader can tell a quick
// run's figures from a full one's.
type planSummary struct {
	PhaseSeconds  float64 `json:"phaseSeconds"`
	PgbenchScale  int     `json:"pgbenchScale"`
	Tenants       int     `json:"tenants"`
	ScaleRequests int     `json:"scaleRequests"`
	OutboxRate    int     `json:"outboxTargetRate"`
}

func newResults(cfg Config, p plan) *Results {
	now := time.Now().UTC()
	r := &Results{Date: now.Format("2006-01-02T15-04-05Z"), Quick: cfg.Quick, Command: cfg.Command, started: now,
		Plan: planSummary{PhaseSeconds: p.phase.Seconds(), PgbenchScale: p.pgbenchScale, Tenants: p.tenants,
			ScaleRequests: p.scaleRequests, OutboxRate: p.outboxRate}}
	if cfg.Quick {
		r.NotMeasured = append(r.NotMeasured,
			Gap{What: "placement latency at 10,000 nodes", Why: "--quick seeds 100 and 1,000 nodes only (the scale ratio is 1,000 ÷ 100)"},
			Gap{What: "outbox batch read at a 1M backlog", Why: "--quick stops at 100k"})
	}
	return r
}

func (r *Results) pgbench(mode string, clients int, sync bool) (PgbenchRun, bool) {
	for _, p := range r.Pgbench {
		if p.Mode == mode && p.Clients == clients && p.SyncCommit == sync {
			return p, true
		}
	}
	return PgbenchRun{}, false
}

func (r *Results) load(name string) (LoadRun, bool) {
	for _, l := range r.Reservations {
		if l.Name == name {
			return l, true
		}
	}
	return LoadRun{}, false
}

// addRatio records a/b, or a gap when either side is missing or zero: a
// ratio is never made up, and never NaN in the JSON.
func (r *Results) addRatio(name, num, den string, a, b float64, ok bool) {
	if !ok || b == 0 || math.IsNaN(a/b) || math.IsInf(a/b, 0) {
		r.NotMeasured = append(r.NotMeasured, Gap{What: name, Why: "a side of the ratio was not measured (see above)"})
		return
	}
	r.Ratios = append(r.Ratios, Ratio{Name: name, Value: a / b, Numerator: num, Denominator: den})
}

// computeRatios derives the headline figures from the raw measurements.
func (r *Results) computeRatios() {
	r.headlineRatios()
	concs := map[int]bool{}
	for _, l := range r.Reservations {
		if l.SyncCommit && l.Pools > 1 {
			concs[l.Concurrency] = true
		}
	}
	for _, c := range slices.Sorted(maps.Keys(concs)) {
		name := fmt.Sprintf("uniform c%d", c)
		l, _ := r.load(name)
		for _, mode := range []string{"simple-update", "tpcb"} {
			p, ok := r.pgbench(mode, c, true)
			r.addRatio(fmt.Sprintf("reservations/s ÷ pgbench %s tps, c%d", mode, c), name, p.Name(), l.PerSec, p.TPS, ok)
		}
	}
	var hot, uni LoadRun
	hotOK, uniOK := false, false
	for _, l := range r.Reservations {
		if l.Pools == 1 && l.SyncCommit {
			hot, hotOK = l, true
			uni, uniOK = r.load(fmt.Sprintf("uniform c%d", l.Concurrency))
		}
	}
	r.addRatio("hot spot (10 nodes) ÷ uniform, reservations/s", hot.Name, uni.Name, hot.PerSec, uni.PerSec, hotOK && uniOK)
	r.addRatio("hot spot (10 nodes) ÷ uniform, create p99", hot.Name, uni.Name, hot.P99Ms, uni.P99Ms, hotOK && uniOK)
	if n := len(r.Scale); n >= 2 {
		a, b := r.Scale[n-1], r.Scale[0]
		r.addRatio(fmt.Sprintf("placement p50, %d ÷ %d nodes", a.Nodes, b.Nodes), fmt.Sprint(a.Nodes), fmt.Sprint(b.Nodes), a.P50Ms, b.P50Ms, true)
	} else {
		r.addRatio("placement p50, largest ÷ smallest fleet", "", "", 0, 0, false)
	}
	for _, l := range r.Reservations {
		if !l.SyncCommit {
			on, onOK := r.load(fmt.Sprintf("uniform c%d", l.Concurrency))
			r.addRatio(fmt.Sprintf("reservations synchronous_commit off ÷ on, c%d", l.Concurrency), l.Name, on.Name, l.PerSec, on.PerSec, onOK)
			off, offOK := r.pgbench("simple-update", l.Concurrency, false)
			pon, ponOK := r.pgbench("simple-update", l.Concurrency, true)
			r.addRatio(fmt.Sprintf("pgbench -N synchronous_commit off ÷ on, c%d", l.Concurrency), off.Name(), pon.Name(), off.TPS, pon.TPS, offOK && ponOK)
		}
	}
	o := r.Outbox
	r.addRatio("outbox reader ÷ writer throughput", "drain", "unpaced appends", o.ReaderPerSec, o.WriterPerSec, o.WriterPerSec > 0)
	r.addRatio("outbox appends with notification ÷ without", "unpaced appends", "unpaced appends, no notifier", o.WriterPerSec, o.WriterNoNotifyPerSec, o.WriterNoNotifyPerSec > 0)
	if n := len(o.Backlogs); n >= 2 {
		a, b := o.Backlogs[n-1], o.Backlogs[0]
		r.addRatio(fmt.Sprintf("outbox batch read p50, %d ÷ %d backlog", a.Events, b.Events), fmt.Sprint(a.Events), fmt.Sprint(b.Events), a.P50Ms, b.P50Ms, true)
	}
	r.Ratios = append(r.Ratios, r.Pipeline.ratios()...)
	r.Ratios = append(r.Ratios, r.APIScale.ratios()...)
	r.Ratios = append(r.Ratios, r.NATS.ratios()...)
	r.Ratios = append(r.Ratios, r.Replica.ratios()...)
}

// headlineRatios are the figures issue 15 leads with: HTTP create +
// release through one `compute serve`, and the in-process commands, each
// against pgbench -N at the run's highest client count.
func (r *Results) headlineRatios() {
	top := 0
	for _, p := range r.Pgbench {
		if p.Mode == "simple-update" && p.SyncCommit {
			top = max(top, p.Clients)
		}
	}
	pb, pbOK := r.pgbench("simple-update", top, true)
	for _, run := range r.APIScale.Runs {
		if run.Processes == 1 {
			r.addRatio(fmt.Sprintf("HTTP reservations/s, 1 compute serve ÷ pgbench -N tps, c%d", top),
				fmt.Sprintf("1 API process, c%d", r.APIScale.Clients), pb.Name(), run.Load.PerSec, pb.TPS, pbOK)
		}
	}
}

// writeJSON writes dir/<date>.json.
func (r *Results) writeJSON(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	path := filepath.Join(dir, r.Date+".json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}
