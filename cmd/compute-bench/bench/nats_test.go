package bench

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// TestNATSMeasurementsShape runs the nats suite at the tiny size against
// real `compute serve` children and a nats-server: the sink forwards the
// backlog, both sources catch a client up on the whole log and deliver
// every event to every stream, and every stream resumes.
func TestNATSMeasurementsShape(t *testing.T) {
	t.Parallel()
	bin, err := findNATSServer()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	d := pgtest.New(t)
	p := tinyPlan()
	r, err := natsSuite(context.Background(), d.URL, p, mustComputeBinary(t), bin, newProgress(io.Discard))
	require.NoError(t, err)

	require.NotEmpty(t, r.ServerVersion)
	require.Positive(t, r.DrainPerSec)
	require.Positive(t, r.ForwardPerSec)
	require.Positive(t, r.Baseline.Events)
	// The tiny plan's baseline may cost PostgreSQL less than one CPU tick
	// (10 ms): measured, but possibly zero.
	require.GreaterOrEqual(t, r.Baseline.ServerCPUMsPerSec, 0.0)
	for _, run := range []NATSStreamRun{r.Postgres, r.JetStream} {
		require.NotEmpty(t, run.Source)
		require.GreaterOrEqual(t, run.CatchUpEvents, p.natsBacklog, run.Source)
		require.Positive(t, run.CatchUpPerSec, run.Source)
		require.Positive(t, run.Events, run.Source)
		require.Equal(t, int64(run.Events)*int64(p.natsStreams), run.Seen, "%s: every stream gets every event", run.Source)
		require.Zero(t, run.Ended, run.Source)
		require.Equal(t, int64(p.natsResumeEvents)*int64(p.natsStreams), run.ResumeSeen, "%s: every stream resumes without a gap or a repeat", run.Source)
		require.Positive(t, run.ResumeSeconds, run.Source)
	}
	require.Equal(t, "postgres", r.Postgres.Source)
	require.Equal(t, "nats", r.JetStream.Source)
	// The resume ratio needs a CPU tick (10 ms) of PostgreSQL's for the
	// PostgreSQL source, which 20 streams may not cost.
	require.GreaterOrEqual(t, len(r.ratios()), 3)

	var out bytes.Buffer
	r.print(&out)
	require.Contains(t, out.String(), "JetStream sink forwards")
	require.Contains(t, out.String(), "nats")
}
