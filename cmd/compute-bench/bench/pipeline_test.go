package bench

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// Both tests switch the test database to the real clock before anything
// else: webhook-timestamp is compute_now(), which the receiver checks
// against its own clock (a frozen simulated epoch is outside the 5-minute
// tolerance), and the child process's leases and claims expire in
// compute_now() time.

func TestPipelineMeasurementsShape(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	d.UseSimClock(t, false)
	p := tinyPlan()
	r, err := pipelineSuite(context.Background(), d.URL, p, mustComputeBinary(t), newProgress(io.Discard))
	require.NoError(t, err)

	require.Positive(t, r.Load.Booked)
	require.Positive(t, r.Events)
	require.Equal(t, r.Events, sumCounts(r.EventsByType), "events by type add up")
	require.Zero(t, r.Undelivered, "every event is delivered")
	require.Zero(t, r.Duplicates, "no webhook-id arrives twice")
	require.Zero(t, r.BadSignatures)
	require.GreaterOrEqual(t, r.Received, r.Events)
	require.LessOrEqual(t, r.DeliveredInWindow, r.Events)
	require.Positive(t, r.LatencySamples)
	require.GreaterOrEqual(t, r.DeliveryP99Ms, r.DeliveryP50Ms)
	require.Positive(t, r.ProjectionLagSamples)
	require.GreaterOrEqual(t, r.ProjectionLagP99Ms, r.ProjectionLagP50Ms)
	require.Len(t, r.CheckpointLag, 2)
	for _, c := range r.CheckpointLag {
		require.GreaterOrEqual(t, c.P99Ms, c.P50Ms, c.Sink)
	}
	for name, v := range map[string]float64{"events/s": r.EventsPerSec, "deliveries/s": r.DeliveriesPerSec, "ratio": r.DeliveryRatio} {
		finite(t, name, v)
	}
	ratios := r.ratios()
	require.Len(t, ratios, 2)
	require.InDelta(t, 1.0, ratios[1].Value, 1e-9, "delivered ÷ committed after drain")
	var out bytes.Buffer
	r.print(&out)
	require.Contains(t, out.String(), "PIPELINE")
}

func TestAPIScaleMeasurementsShape(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	d.UseSimClock(t, false)
	p := tinyPlan()
	r, err := apiScaleSuite(context.Background(), d.URL, p, mustComputeBinary(t), newProgress(io.Discard))
	require.NoError(t, err)

	require.Len(t, r.Runs, len(p.apiProcesses), "one result per process count")
	for i, run := range r.Runs {
		require.Equal(t, p.apiProcesses[i], run.Processes)
		require.Equal(t, run.Processes, run.Load.URLs)
		require.Positive(t, run.Load.Booked, "%d processes", run.Processes)
		require.LessOrEqual(t, run.Load.Booked+run.Load.Pending, int64(p.maxOpsPerRun), "the request budget bounds the run")
		require.GreaterOrEqual(t, run.Load.P99Ms, run.Load.P50Ms)
		finite(t, "perSec", run.Load.PerSec)
		require.Positive(t, run.PerSecRatioToOne)
	}
	require.InDelta(t, 1.0, r.Runs[0].PerSecRatioToOne, 1e-9, "one process ÷ itself")
	require.Len(t, r.ratios(), len(p.apiProcesses)-1)
	var out bytes.Buffer
	r.print(&out)
	require.Contains(t, out.String(), "API PROCESSES")
}

func sumCounts(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
