package testenv

import (
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// UnmountUnder unmounts every file system mounted in dir or below it,
// the deepest first, so that dir can be removed: a `compute agent` the
// test killed leaves its allocations' work directories mounted (each a
// loop-mounted image, which the daemon unmounts only at a release, and
// whose loop device goes with the mount). Call it once the daemon's
// containers are deleted; a mount still busy then is detached.
func UnmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			points = append(points, f[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		if unix.Unmount(p, 0) != nil {
			_ = unix.Unmount(p, unix.MNT_DETACH)
		}
	}
}
