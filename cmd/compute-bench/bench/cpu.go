package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/cmd/compute-bench/benchdb"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat
// (100 on every Linux this runs on).
const clockTicks = 100

// cpuMeter reads the CPU time spent so far by this process (the load
// generator and the in-process commands, or only the load generator when
// the commands run in `compute serve` children) and by the PostgreSQL
// server: the postmaster, every live child (backends, walwriter,
// checkpointer, …) and every child that has exited (the kernel adds those
// to the postmaster's cutime and cstime when it reaps them), so the sum only
// grows and two readings bracket a measurement.
type cpuMeter struct {
	postmaster int // 0 when the server's processes cannot be read
}

// newCPUMeter finds the postmaster of the server pool talks to: the parent
// of the backend serving the pool. On a server on another machine, or whose
// /proc entries this process cannot read, only this process is measured.
func newCPUMeter(ctx context.Context, pool *pgxpool.Pool) cpuMeter {
	backend, err := benchdb.New(pool).BenchBackendPID(ctx)
	if err != nil {
		return cpuMeter{}
	}
	st, err := readStat(int(backend))
	if err != nil {
		return cpuMeter{}
	}
	if _, err := readStat(st.ppid); err != nil {
		return cpuMeter{}
	}
	return cpuMeter{postmaster: st.ppid}
}

// cpuReading is one reading of cpuMeter.
type cpuReading struct {
	self, server time.Duration
	serverOK     bool
}

func (m cpuMeter) read() cpuReading {
	var r cpuReading
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		r.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if m.postmaster == 0 {
		return r
	}
	pm, err := readStat(m.postmaster)
	if err != nil {
		return r
	}
	ticks := pm.utime + pm.stime + pm.cutime + pm.cstime
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.ppid != m.postmaster {
			continue
		}
		ticks += st.utime + st.stime
	}
	r.server, r.serverOK = time.Duration(ticks)*time.Second/clockTicks, true
	return r
}

// procStat is the part of /proc/<pid>/stat the meter needs.
type procStat struct {
	ppid                         int
	utime, stime, cutime, cstime int64
}

// readStat parses /proc/<pid>/stat. The second field (the command name)
// may hold spaces and parentheses, so fields are counted after its last ')'.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); ppid is field 4, utime..cstime fields 14–17.
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("stat of %d: %d fields", pid, len(f))
	}
	num := func(k int) int64 { n, _ := strconv.ParseInt(f[k-3], 10, 64); return n }
	return procStat{ppid: int(num(4)), utime: num(14), stime: num(15), cutime: num(16), cstime: num(17)}, nil
}
