package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Outside a terminal (a CI log), progress writes one line per phase, not
// one per counter step or bar update.
func TestProgressLogsOneLinePerPhase(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := newProgress(&out)
	for i := range 300 {
		p.set("placement latency at %d nodes: %d / %d", 1000, i, 300)
	}
	p.set("pgbench tpcb c8 (%s)", 3*time.Second)
	p.set("reservations: uniform c8 [%-20s] %3.0f%%", "==", 10.0)
	p.set("reservations: uniform c8 [%-20s] %3.0f%%", "====", 20.0)
	p.set("reservations: hot10 c32 [%-20s] %3.0f%%", "", 0.0)
	p.done()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 4, out.String())
	require.Contains(t, lines[0], "placement latency at 1000 nodes: 0 / 300")
	require.Contains(t, lines[3], "hot10 c32")
	require.NotContains(t, out.String(), "\r")
}
