package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// These tests run every measurement at its smallest size against a test
// database and check the shape of what comes back. They never assert on
// wall time: the figures belong to compute-bench, not to a test run.

func finite(t *testing.T, what string, v float64) {
	t.Helper()
	require.False(t, math.IsNaN(v) || math.IsInf(v, 0), "%s = %v", what, v)
}

func TestPgbenchSuiteShape(t *testing.T) {
	t.Parallel()
	bin, err := findPgbench("")
	if err != nil {
		t.Skip("pgbench is an external program and is not installed: ", err)
	}
	d := pgtest.New(t)
	ctx := context.Background()
	p := tinyPlan()
	require.NoError(t, pgbenchInit(ctx, bin, d.URL, p.pgbenchScale))
	for _, sync := range []bool{true, false} {
		r, err := pgbenchRun(ctx, bin, d.URL, "simple-update", 2, sync, p.phase)
		require.NoError(t, err)
		require.Positive(t, r.TPS, r.Name())
		require.Equal(t, 1, r.Seconds, "pgbench runs whole seconds")
		require.Equal(t, sync, r.SyncCommit)
	}
}

func TestReservationMeasurementsShape(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := context.Background()
	p := tinyPlan()
	prog := newProgress(io.Discard)
	app, err := setupApp(ctx, d.URL, p)
	require.NoError(t, err)
	defer app.close()
	require.Len(t, app.tenants, p.tenants)

	for _, n := range p.scaleNodes {
		pt, err := app.scalePoint(ctx, n, prog)
		require.NoError(t, err)
		require.Equal(t, n, pt.Nodes)
		require.Equal(t, p.scaleRequests, pt.Requests)
		require.Positive(t, pt.Booked)
		require.Positive(t, pt.P50Ms)
		require.GreaterOrEqual(t, pt.P99Ms, pt.P50Ms)
	}
	require.Len(t, app.poolIDs(), p.scaleNodes[len(p.scaleNodes)-1]/nodesPerPool)

	for _, spec := range []loadSpec{
		{Name: "uniform c2", Concurrency: 2, Pools: app.poolIDs(), SyncCommit: true},
		{Name: "hot10 c2", Concurrency: 2, Pools: app.poolIDs()[:1], SyncCommit: true},
		{Name: "uniform c2 sync-off", Concurrency: 2, Pools: app.poolIDs(), SyncCommit: false},
	} {
		r, err := app.runLoad(ctx, spec, p, prog)
		require.NoError(t, err, spec.Name)
		require.Positive(t, r.Booked, spec.Name)
		require.LessOrEqual(t, r.Booked+r.Pending, int64(p.maxOpsPerRun), "the request budget bounds the run")
		require.Equal(t, len(spec.Pools)*nodesPerPool, r.Nodes)
		require.GreaterOrEqual(t, r.Multixacts, int64(0))
		require.GreaterOrEqual(t, r.Deadlocks, int64(0))
		for name, v := range map[string]float64{"perSec": r.PerSec, "p50": r.P50Ms, "p99": r.P99Ms,
			"retries": r.RetriesPer1000, "deadlocks": r.DeadlocksPer1000, "mxact": r.MultixactsPerReservation} {
			finite(t, spec.Name+" "+name, v)
		}
		require.Positive(t, r.PerSec)
	}
}

func TestOutboxMeasurementsShape(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	p := tinyPlan()
	o, err := outboxSuite(context.Background(), d.URL, p, newProgress(io.Discard))
	require.NoError(t, err)
	require.Positive(t, o.Events)
	require.Equal(t, o.Events, o.Seen, "the reader sees every committed event")
	require.GreaterOrEqual(t, o.P99Ms, o.P50Ms)
	require.Positive(t, o.WriterPerSec)
	require.Positive(t, o.WriterNoNotifyPerSec)
	require.Positive(t, o.ReaderPerSec)
	require.Len(t, o.Backlogs, len(p.backlogs))
	for i, b := range o.Backlogs {
		require.Equal(t, p.backlogs[i], b.Events)
		require.Positive(t, b.P50Ms)
	}
}

// TestResultsOutput checks the derived ratios, the JSON and the chart from
// hand-made measurements, including a missing side that must become a gap.
func TestResultsOutput(t *testing.T) {
	t.Parallel()
	r := newResults(Config{Quick: true, Command: "compute-bench --quick"}, tinyPlan())
	r.Machine = Machine{Cores: 2, PGVersion: "15", Settings: map[string]string{"fsync": "on"}}
	r.Pgbench = []PgbenchRun{{Mode: "simple-update", Clients: 8, SyncCommit: true, TPS: 1000},
		{Mode: "simple-update", Clients: 8, SyncCommit: false, TPS: 2000}}
	r.Reservations = []LoadRun{{Name: "uniform c8", Concurrency: 8, Pools: 10, SyncCommit: true, PerSec: 100, P99Ms: 10},
		{Name: "hot10 c8", Concurrency: 8, Pools: 1, SyncCommit: true, PerSec: 50, P99Ms: 40},
		{Name: "uniform c8 sync-off", Concurrency: 8, Pools: 10, SyncCommit: false, PerSec: 150}}
	r.Scale = []ScalePoint{{Nodes: 100, P50Ms: 2}, {Nodes: 1000, P50Ms: 6}}
	r.Outbox = OutboxResult{WriterPerSec: 500, ReaderPerSec: 5000, Backlogs: []BacklogPoint{{Events: 1000, P50Ms: 1}, {Events: 100000, P50Ms: 1.5}}}
	r.computeRatios()

	got := map[string]float64{}
	for _, x := range r.Ratios {
		finite(t, x.Name, x.Value)
		got[x.Name] = x.Value
	}
	require.InDelta(t, 0.1, got["reservations/s ÷ pgbench simple-update tps, c8"], 1e-9)
	require.InDelta(t, 0.5, got["hot spot (10 nodes) ÷ uniform, reservations/s"], 1e-9)
	require.InDelta(t, 3.0, got["placement p50, 1000 ÷ 100 nodes"], 1e-9)
	require.InDelta(t, 1.5, got["reservations synchronous_commit off ÷ on, c8"], 1e-9)
	require.InDelta(t, 2.0, got["pgbench -N synchronous_commit off ÷ on, c8"], 1e-9)
	require.InDelta(t, 10.0, got["outbox reader ÷ writer throughput"], 1e-9)
	var gaps []string
	for _, g := range r.NotMeasured {
		gaps = append(gaps, g.What)
	}
	require.Contains(t, gaps, "reservations/s ÷ pgbench tpcb tps, c8", "no TPC-B run: a gap, not a made-up ratio")

	dir := t.TempDir()
	require.NoError(t, r.writeJSON(dir))
	b, err := os.ReadFile(filepath.Join(dir, r.Date+".json"))
	require.NoError(t, err)
	var back Results
	require.NoError(t, json.Unmarshal(b, &back))
	require.Len(t, back.Ratios, len(r.Ratios))
	require.NoError(t, writeChart(dir, r))
	svg, err := os.ReadFile(filepath.Join(dir, "ratios.svg"))
	require.NoError(t, err)
	require.Contains(t, string(svg), "placement p50, 1000 ÷ 100 nodes")
	var table bytes.Buffer
	r.printTable(&table)
	require.Contains(t, table.String(), "NOT MEASURED")
}
