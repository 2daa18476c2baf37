package agent

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/wire"
)

// chosenLimits are the rows of /proc/<pid>/limits every process of an
// allocation's container must show (rlimits.go), soft and hard, whatever
// the daemon was started with.
var chosenLimits = map[string][2]string{
	"Max cpu time":          {"unlimited", "unlimited"},
	"Max file size":         {"unlimited", "unlimited"},
	"Max data size":         {"unlimited", "unlimited"},
	"Max stack size":        {"67108864", "unlimited"},
	"Max core file size":    {"0", "0"},
	"Max resident set":      {"unlimited", "unlimited"},
	"Max processes":         {"unlimited", "unlimited"},
	"Max open files":        {"65536", "1048576"},
	"Max locked memory":     {"unlimited", "unlimited"},
	"Max address space":     {"unlimited", "unlimited"},
	"Max file locks":        {"unlimited", "unlimited"},
	"Max pending signals":   {"65536", "65536"},
	"Max msgqueue size":     {"819200", "819200"},
	"Max nice priority":     {"0", "0"},
	"Max realtime priority": {"0", "0"},
	"Max realtime timeout":  {"unlimited", "unlimited"},
}

// parseLimits reads the rows of a /proc/<pid>/limits: name → soft, hard.
func parseLimits(t *testing.T, text string) map[string][2]string {
	t.Helper()
	rows := map[string][2]string{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "Max ") {
			continue
		}
		// The name is words; soft and hard are the first two fields after
		// it that start with a digit or are "unlimited".
		fields := strings.Fields(line)
		i := 0
		for i < len(fields) && fields[i] != "unlimited" && (fields[i][0] < '0' || fields[i][0] > '9') {
			i++
		}
		require.Less(t, i+1, len(fields), line)
		rows[strings.Join(fields[:i], " ")] = [2]string{fields[i], fields[i+1]}
	}
	return rows
}

// grantable is want as this test process can grant it: a daemon without
// CAP_SYS_RESOURCE cannot raise a hard limit above its own, and its
// containers get its own hard limit there (workloadRlimits), as on a
// machine whose root lacks the capability; no process gets more open
// files than fs.nr_open. Read from /proc, not from the code under test.
func grantable(t *testing.T, want map[string][2]string) map[string][2]string {
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	var capEff uint64
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			capEff, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			require.NoError(t, err)
		}
	}
	text, err := os.ReadFile("/proc/self/limits")
	require.NoError(t, err)
	own := parseLimits(t, string(text))
	if capEff&(1<<24) != 0 { // CAP_SYS_RESOURCE: no ceiling but fs.nr_open
		for name := range own {
			own[name] = [2]string{"unlimited", "unlimited"}
		}
	}
	value := func(s string) uint64 {
		if s == "unlimited" {
			return math.MaxUint64
		}
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		return v
	}
	nrOpen, err := os.ReadFile("/proc/sys/fs/nr_open")
	require.NoError(t, err)
	if n := strings.TrimSpace(string(nrOpen)); value(n) < value(own["Max open files"][1]) {
		own["Max open files"] = [2]string{n, n}
	}
	got := map[string][2]string{}
	for name, l := range want {
		ownHard := own[name][1]
		if value(l[1]) > value(ownHard) {
			soft := l[0]
			if value(soft) > value(ownHard) {
				soft = ownHard
			}
			t.Logf("%s: this process cannot grant more (no CAP_SYS_RESOURCE, or fs.nr_open): %s/%s, not %s/%s",
				name, soft, ownHard, l[0], l[1])
			l = [2]string{soft, ownHard}
		}
		got[name] = l
	}
	return got
}

// Every process of an allocation's container has the chosen rlimits, not
// the daemon's: a workload (as an exec job and as an instance, in its own
// directory) and the container's keeper. The workload cannot raise its
// core limit, and a crash leaves no core in its /work.
func TestContainerRlimitsAreChosen(t *testing.T) {
	sb := containerSandbox(t)
	want := grantable(t, chosenLimits)
	a := assignOf("alc_rlimits", 1, 256)
	sb.forgetAtEnd(t, a)
	out, code := sb.runScript(t, a, `cat /proc/self/limits; echo ===; cat /proc/1/limits; echo ===
ulimit -c 1 2>/dev/null && echo core-raised || echo core-refused
sh -c 'kill -SEGV $$' 2>/dev/null; ls /work | grep -c '^core' || true`)
	require.Zero(t, code, out)
	parts := strings.Split(out, "===\n")
	require.Len(t, parts, 3, out)
	workload, keeper := parseLimits(t, parts[0]), parseLimits(t, parts[1])
	require.Equal(t, want, workload, "the workload's /proc/self/limits:\n%s", parts[0])
	require.Equal(t, want, keeper, "the keeper's /proc/1/limits:\n%s", parts[1])
	require.Equal(t, []string{"core-refused", "0"}, strings.Fields(parts[2]), "no core limit to raise, no core written")

	// An instance runs through the same process spec, in a directory of
	// its own: the same limits.
	out, code = sb.runScriptIn(t, a, "instances/ins_rlimits", `cat /proc/self/limits`)
	require.Zero(t, code, out)
	require.Equal(t, want, parseLimits(t, out))
}

// runScriptIn is runScript in dir below /work, as an instance runs.
func (s *sandbox) runScriptIn(t *testing.T, a *wire.AssignPayload, dir, script string) (string, int32) {
	t.Helper()
	w, err := s.workload(t.Context(), a, script, dir)
	require.NoError(t, err)
	out := &tailBuffer{max: maxOutput}
	w.cmd.Stdout, w.cmd.Stderr = out, out
	code, _ := exitStatus(w.cmd.Run(), w.oomKilled())
	return out.String(), code
}

// lockScript starts n processes, one after the other, that each lock mib
// MiB of private anonymous memory (mmap, then mlock) and keep it, and
// prints how many locked theirs, and then how many still hold it and how
// many were SIGKILLed, once the killed ones are gone (up to 10 s).
func lockScript(n, mib int) string {
	return fmt.Sprintf(`python3 -c '
import ctypes, mmap, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
size, n, locked, kids = %d << 20, %d, 0, []
for i in range(n):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        buf = (ctypes.c_char * size).from_buffer(m)
        os.write(w, b"x" if libc.mlock(ctypes.addressof(buf), size) == 0 else b"")
        signal.pause()
    os.close(w)
    kids.append(pid)
    locked += os.read(r, 1) == b"x"
    os.close(r)
alive, killed, deadline = set(kids), 0, time.monotonic() + 10
while time.monotonic() < deadline:
    for pid in list(alive):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            alive.discard(pid)
            killed += os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    if len(alive) * size <= %d << 20:
        break
    time.sleep(0.05)
print("locked", locked, "holding", len(alive), "killed", killed, flush=True)
for pid in alive:
    os.kill(pid, signal.SIGKILL)
'`, mib, n, 128)
}

// Unlimited RLIMIT_MEMLOCK does not let an allocation hold more than its
// memory limit. The rlimit counts per process (mlock) and never bounded an
// allocation's total anyway; locked pages are charged to its memory cgroup
// (v1 here): of 40 processes that each lock 6 MiB (within any
// RLIMIT_MEMLOCK of 8 MiB or more) in a 128 MiB allocation, each mlock
// succeeds, but the allocation's OOM killer kills earlier holders to make
// room, so that at most 128 MiB stay locked; another allocation runs on.
// Within the limit, every process keeps its locked memory.
func TestContainerLockedMemoryIsChargedToTheAllocation(t *testing.T) {
	testenv.Program(t, "python3", "", "python3")
	sb := containerSandbox(t)
	small, other := assignOf("alc_mlock", 1, 128), assignOf("alc_mlock_other", 1, 128)
	sb.forgetAtEnd(t, small, other)
	bystander := sb.background(t, other, "exec sleep 600")

	out, code := sb.runScript(t, small, lockScript(4, 6))
	require.Zero(t, code, out)
	require.Equal(t, "locked 4 holding 4 killed 0", strings.TrimSpace(out), "24 MiB locked within 128 MiB")
	require.Zero(t, oomKills(sb.cfg.CgroupRoot, sb.cgroupsPath(small.AllocationID)))

	out, _ = sb.runScript(t, small, lockScript(40, 6))
	t.Logf("40 processes locking 6 MiB each in 128 MiB: %s", strings.TrimSpace(out))
	var locked, holding, killed int
	_, err := fmt.Sscanf(out, "locked %d holding %d killed %d", &locked, &holding, &killed)
	require.NoError(t, err, out)
	require.LessOrEqual(t, holding*6, 128, "no more held locked than the memory limit")
	require.Positive(t, killed, "holders of locked memory were killed to make room")
	require.GreaterOrEqual(t, int(oomKills(sb.cfg.CgroupRoot, sb.cgroupsPath(small.AllocationID))), killed,
		"by the allocation's OOM killer")
	require.Zero(t, oomKills(sb.cfg.CgroupRoot, sb.cgroupsPath(other.AllocationID)), "not the other's")
	require.Nil(t, bystander.cmd.ProcessState, "the other allocation's workload runs on")
}

// The limits that count per user id (pending signals, POSIX message
// queues) count per allocation, whose user id is its own: one allocation
// that queues signals until refused, at 65,536, leaves another's count at
// zero; its tenth POSIX message queue of 80 KiB is refused (EMFILE: past
// 800 KiB) in its own IPC namespace.
func TestContainerPerUserLimitsArePerAllocation(t *testing.T) {
	testenv.Program(t, "python3", "", "python3")
	sb := containerSandbox(t)
	a, b := assignOf("alc_sigq_a", 1, 256), assignOf("alc_sigq_b", 1, 256)
	sb.forgetAtEnd(t, a, b)
	sb.background(t, a, `exec python3 -c '
import ctypes, ctypes.util, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
sig = signal.SIGRTMIN
signal.pthread_sigmask(signal.SIG_BLOCK, [sig])
n = 0
while libc.sigqueue(os.getpid(), sig, ctypes.c_void_p(0)) == 0:
    n += 1
print("queued", n, os.strerror(ctypes.get_errno()), flush=True)
rt = ctypes.CDLL(ctypes.util.find_library("rt"), use_errno=True)
class attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long),
                ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]
rt.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(attr)]
q = 0
while q < 100 and rt.mq_open(b"/q%d" % q, os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(attr(0, 10, 8192, 0))) >= 0:
    q += 1
print("queues", q, os.strerror(ctypes.get_errno()), flush=True)
open("/work/done", "w").close()
time.sleep(600)
' > /work/out 2>&1`)
	work := filepath.Join(sb.domainDir(a.AllocationID), "work")
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(work, "done"))
		return err == nil
	}, time.Minute, 50*time.Millisecond)
	got, err := os.ReadFile(filepath.Join(work, "out"))
	require.NoError(t, err)
	require.Equal(t, "queued 65536 Resource temporarily unavailable\nqueues 9 Too many open files\n", string(got))

	out, code := sb.runScript(t, b, `grep SigQ /proc/self/status`)
	require.Zero(t, code, out)
	require.Equal(t, "SigQ:\t0/65536", strings.TrimSpace(out), "the other allocation's user has no signal queued")
}
