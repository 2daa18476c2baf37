package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// Spread quotes each figure as median [min–max] over the runs that have
// it, and says over how many.
func TestSpreadMedianMinMax(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i, v := range []float64{0.30, 0.10, 0.20} {
		r := Results{Ratios: []Ratio{{Name: "in-process ÷ pgbench", Value: v}},
			Reservations: []LoadRun{{Name: "uniform c8", PerSec: 100 * v, RoundTripsPerCreate: 5}}}
		if i == 2 {
			r.Reservations = nil // a run without the load
		}
		b, err := json.Marshal(r)
		require.NoError(t, err)
		p := filepath.Join(dir, string(rune('a'+i))+".json")
		require.NoError(t, os.WriteFile(p, b, 0o644))
		paths = append(paths, p)
	}
	var out bytes.Buffer
	require.NoError(t, Spread(&out, paths))
	row := func(name string) []string {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)$`).FindStringSubmatch(out.String())
		require.NotNil(t, m, "row %q in:\n%s", name, out.String())
		return m[1:]
	}
	require.Equal(t, []string{"0.200", "0.100", "0.300", "3"}, row("in-process ÷ pgbench"))
	require.Equal(t, []string{"20.0", "10.0", "30.0", "2"}, row("uniform c8: reservations/s"))
	require.NotContains(t, out.String(), "CPU busy", "a figure no run has is left out")
	require.Error(t, Spread(&out, nil))
}
