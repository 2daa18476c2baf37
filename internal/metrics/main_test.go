package metrics_test

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// series gathers g into one value per series, keyed as the exposition
// writes it: name{label="value",…} with the labels sorted, a histogram by
// its _count.
func series(t testing.TB, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	fams, err := g.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			sort.Strings(labels)
			key := f.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[f.GetName()+"_count"+strings.TrimPrefix(key, f.GetName())] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// withPrefix keeps the series whose name starts with prefix.
func withPrefix(all map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range all {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}
