package agent

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/wire"
)

// On a node that only measures, a file below a directory chain longer
// than a path can be (PATH_MAX, 4,096 bytes on Linux) is counted all the
// same: the workload made it with relative paths, one level at a time,
// and a walk by path, which cannot read below PATH_MAX, never saw it (200
// MB in a 64 MiB /work ran on).
func TestContainerDiskCountsFilesBeyondPathMax(t *testing.T) {
	testenv.Program(t, "perl", "", "perl")
	now := time.Now()
	d, sb := measuredDaemon(t, func() time.Time { return now })
	deep := assignment("alc_deep", now.Add(-time.Hour), now.Add(time.Hour), 1)
	deep.DiskGB = 0 // 64 MiB
	d.sleepIn(t, d.journal, deep)
	requireFree(t, sb.root, 1<<30)
	out, code := sb.runScript(t, &deep, `perl -e 'my $n = "d" x 250;
for (1..20) { mkdir $n or die "mkdir: $!\n"; chdir $n or die "chdir: $!\n" }
exec "fallocate", "-l", "200M", "fill"' && echo ok`)
	require.Zero(t, code, out)
	require.Equal(t, "ok\n", out)

	stopped := d.checkDisk()
	require.Len(t, stopped, 1, "200 MB in a 64 MiB /work")
	require.Contains(t, stopped[0].Reason, wire.ReasonDiskExceeded+": /work uses 0.20 GiB of the 64 MiB", "what the chain holds is measured")
	require.Equal(t, int64(1), workUsage(sb.workDir("alc_deep"), nil).files, "/work is emptied, the deep file too")
}
