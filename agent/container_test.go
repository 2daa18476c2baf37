package agent

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/wire"
)

// containerSandbox is a sandbox in container mode with four fake GPUs, on
// its own node id, workload root and uid table; it skips where containers
// cannot run (not root, no runc).
func containerSandbox(t *testing.T) *sandbox {
	t.Helper()
	testenv.Require(t, os.Geteuid() == 0, "container isolation needs root")
	testenv.Program(t, "runc", "", "runc")
	root, err := os.MkdirTemp("", "compute-ct-")
	require.NoError(t, err)
	t.Cleanup(func() {
		testenv.UnmountUnder(root) // what a failed test did not release
		_ = os.RemoveAll(root)
	})
	node := fmt.Sprintf("ct%d-%s", os.Getpid(), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	// The node's cgroup (/compute/<node>, in every hierarchy) goes last,
	// after the test's allocations: a daemon keeps its node's for as long
	// as the node exists, but every test is a node of its own, and each
	// run left one empty directory per test and hierarchy behind.
	t.Cleanup(func() { _ = removeCgroupTree("", "/compute/"+node) })
	cfg := Config{NodeID: node, StateDir: t.TempDir(), WorkloadDir: root, FakeGPUs: "4xH100-80GB",
		UIDTable: filepath.Join(t.TempDir(), "uids.json"), Logger: slog.New(slog.DiscardHandler)}
	gpus, err := inventoryGPUs(context.Background(), node, cfg.FakeGPUs)
	require.NoError(t, err)
	sb, err := openSandbox(context.Background(), cfg, gpus)
	require.NoError(t, err)
	require.NoError(t, sb.check())
	return sb
}

// A test's sandbox leaves no cgroup of its node behind.
func TestContainerSandboxLeavesNoNodeCgroup(t *testing.T) {
	var node string
	t.Run("sandbox", func(t *testing.T) {
		sb := containerSandbox(t)
		node = sb.nodeID
		a := assignOf("alc_tidy", 1, 128)
		sb.forgetAtEnd(t, a)
		out, code := sb.runScript(t, a, "true")
		require.Zero(t, code, out)
		require.NotEmpty(t, cgroupDirs(sb.cfg.CgroupRoot, "/compute/"+node))
	})
	require.NotEmpty(t, node)
	require.Empty(t, cgroupDirs("", "/compute/"+node), "the test's node left its cgroup behind")
}

// run runs script as a workload of a and returns its output and exit
// status.
func (s *sandbox) runScript(t *testing.T, a *wire.AssignPayload, script string) (string, int32) {
	out, code, _ := s.runScriptReason(t, a, script)
	return out, code
}

// runScriptReason is runScript with the failure's reason.
func (s *sandbox) runScriptReason(t *testing.T, a *wire.AssignPayload, script string) (string, int32, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := s.workload(ctx, a, script, ".")
	require.NoError(t, err)
	out := &tailBuffer{max: maxOutput}
	w.cmd.Stdout, w.cmd.Stderr = out, out
	code, reason := exitStatus(w.cmd.Run(), w.oomKilled())
	return out.String(), code, reason
}

// background starts script as a workload of a and leaves it running
// until the test ends.
func (s *sandbox) background(t *testing.T, a *wire.AssignPayload, script string) *workload {
	t.Helper()
	w, err := s.workload(context.Background(), a, script, ".")
	require.NoError(t, err)
	require.NoError(t, w.cmd.Start())
	t.Cleanup(func() { w.kill(); _ = w.cmd.Wait() })
	return w
}

// forgetAtEnd releases the allocations when the test ends.
func (s *sandbox) forgetAtEnd(t *testing.T, as ...*wire.AssignPayload) {
	t.Cleanup(func() {
		for _, a := range as {
			_ = s.forget(context.Background(), a.AllocationID)
		}
	})
}

// keeperPID is the host pid of the allocation container's first process.
func (s *sandbox) keeperPID(t *testing.T, domain string) int {
	st, err := s.runc.state(context.Background(), domain)
	require.NoError(t, err)
	require.Equal(t, "running", st.Status)
	return st.PID
}

// A workload holding GPU 0 opens its own GPU and the driver's control
// device (ENXIO: allowed, no driver behind a fake device), and gets EPERM
// on every other GPU even when the node exists in its /dev: the kernel's
// device cgroup decides, not CUDA_VISIBLE_DEVICES.
func TestContainerSeesOnlyItsGPUs(t *testing.T) {
	sb := containerSandbox(t)
	a := &wire.AssignPayload{AllocationID: "alc_gpu0", VCPU: 1, MemoryMB: 256,
		Devices: []wire.AssignedDevice{{ID: sb.devices.gpus[0].UUID, GPU: sb.devices.gpus[0].UUID, Kind: "gpu",
			Visible: sb.devices.gpus[0].UUID}}}
	sb.forgetAtEnd(t, a)
	out, code := sb.runScript(t, a, "ls /dev")
	require.Zero(t, code, out)
	require.Contains(t, strings.Fields(out), "nvidia0")
	require.Contains(t, strings.Fields(out), "nvidiactl")
	require.NotContains(t, strings.Fields(out), "nvidia3", "only its GPU is in its /dev")
	// Root on the host puts the other GPUs' nodes into the container's
	// /dev, as a workload that found a way to them would have them.
	devDir := fmt.Sprintf("/proc/%d/root/dev", sb.keeperPID(t, a.AllocationID))
	for _, minor := range []uint32{1, 2, 3} {
		require.NoError(t, unix.Mknod(filepath.Join(devDir, fmt.Sprintf("nvidia%d", minor)), unix.S_IFCHR|0o666,
			int(unix.Mkdev(nvidiaMajor, minor))))
	}
	out, _ = sb.runScript(t, a, `unset CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES
for d in nvidia0 nvidiactl nvidia1 nvidia2 nvidia3; do head -c1 /dev/$d >/dev/null 2>err; echo "$d $(sed 's/.*: //' err)"; done`)
	// Allowed: the open passes the device cgroup, and fails only for
	// want of a driver (ENXIO; EINVAL where a real NVIDIA driver owns
	// major 195). Forbidden: EPERM.
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		dev, errText, _ := strings.Cut(line, " ")
		if dev == "nvidia0" || dev == "nvidiactl" {
			require.NotEqual(t, "Operation not permitted", errText, "its own GPU and the control device are allowed")
		} else {
			require.Equal(t, "Operation not permitted", errText, "%s is another GPU", dev)
		}
	}
	require.Equal(t, 5, strings.Count(out, "\n"), out)
}

// containerDaemon is a daemon on a container sandbox (containerSandbox),
// with a journal of its own, the clock now, and no session: the control
// plane is unreachable.
func containerDaemon(t *testing.T, now func() time.Time) (*daemon, *sandbox, *journal) {
	t.Helper()
	sb := containerSandbox(t)
	j, err := openJournal(t.TempDir())
	require.NoError(t, err)
	d := &daemon{cfg: sb.cfg, journal: j, log: sb.log, sandbox: sb, gpus: sb.devices.gpus, now: now}
	d.cfg.StopGrace = 100 * time.Millisecond
	d.instances.now = func() time.Time { return d.now() }
	return d, sb, j
}

// assignOf is an assignment of no GPU with the given limits.
func assignOf(id string, vcpu, memoryMB int64) *wire.AssignPayload {
	return &wire.AssignPayload{AllocationID: id, VCPU: vcpu, MemoryMB: memoryMB}
}

// An allocation that touches more than its memory is OOM-killed inside
// its container, reported OOMKilled; another allocation's workload and the
// daemon run on.
func TestContainerMemoryLimit(t *testing.T) {
	sb := containerSandbox(t)
	small, other := assignOf("alc_small", 1, 64), assignOf("alc_other", 1, 64)
	sb.forgetAtEnd(t, small, other)
	bystander := sb.background(t, other, "exec sleep 600")

	out, code, reason := sb.runScriptReason(t, small, `x=$(head -c 200000000 /dev/zero | tr '\0' a); echo survived ${#x}`)
	require.Equal(t, int32(137), code, out)
	require.Equal(t, wire.ReasonOOMKilled, reason)
	require.Positive(t, oomKills(sb.cfg.CgroupRoot, sb.cgroupsPath(small.AllocationID)), "its OOM killer fired")
	require.Zero(t, oomKills(sb.cfg.CgroupRoot, sb.cgroupsPath(other.AllocationID)), "not the other's")
	require.Nil(t, bystander.cmd.ProcessState, "the other allocation's workload runs on")
	require.True(t, cgroupHasProcesses(sb.cfg.CgroupRoot, sb.cgroupsPath(other.AllocationID)))
}

// An allocation cannot start more processes than its pids limit.
func TestContainerPidsLimit(t *testing.T) {
	sb := containerSandbox(t)
	a := assignOf("alc_pids", 1, 0) // 1 vCPU: DefaultPidsPerVCPU = 512 processes
	sb.forgetAtEnd(t, a)
	out, code := sb.runScript(t, a, `i=0; while [ $i -lt 700 ]; do sleep 60 >/dev/null 2>&1 & i=$((i+1)); done; echo started $i`)
	require.NotZero(t, code, "the shell could not fork past the limit")
	require.NotContains(t, out, "started 700")
	max, err := os.ReadFile(filepath.Join(DefaultCgroupRoot, "pids", sb.cgroupsPath(a.AllocationID), "pids.max"))
	if err != nil { // cgroup v2
		max, err = os.ReadFile(filepath.Join(DefaultCgroupRoot, sb.cgroupsPath(a.AllocationID), "pids.max"))
	}
	require.NoError(t, err)
	require.Equal(t, "512", strings.TrimSpace(string(max)))
}

// A workload sees only its own allocation's processes, and cannot reach
// a TCP server on the node's loopback: its network is its own.
func TestContainerNamespaces(t *testing.T) {
	sb := containerSandbox(t)
	a, b := assignOf("alc_ns_a", 1, 0), assignOf("alc_ns_b", 1, 0)
	sb.forgetAtEnd(t, a, b)
	sb.background(t, b, "exec sleep 4242")

	l, err := netListen(t)
	require.NoError(t, err)
	out, _ := sb.runScript(t, a, fmt.Sprintf(`cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' ' | grep -c 'sleep 424[2]'
ls -d /proc/[0-9]* | wc -l
bash -c 'echo > /dev/tcp/127.0.0.1/%d' 2>/dev/null && echo connected || echo refused
id -u`, l.port))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	require.Equal(t, "0", lines[0], "another allocation's process is not in its /proc")
	require.Equal(t, "refused", lines[2], "the node's loopback is not its loopback")
	require.NotEqual(t, "0", lines[3])
	require.Zero(t, l.accepted(), "nothing reached the node's listener")
}

// Nothing of an allocation survives its release: a setsid grandchild and
// a double-forked one die with the container; its /tmp and /dev/shm go;
// its user id is free again only once no process of it remains.
func TestContainerNothingSurvivesTheRelease(t *testing.T) {
	sb := containerSandbox(t)
	a := assignOf("alc_gone", 1, 128)
	out, code := sb.runScript(t, a, `setsid sh -c 'exec sleep 777' </dev/null >/dev/null 2>&1 &
(sh -c 'sleep 778 >/dev/null 2>&1 &' &) ; echo x > /tmp/left; head -c 1000000 /dev/zero > /dev/shm/left; echo ok`)
	require.Zero(t, code, out)
	path := sb.cgroupsPath(a.AllocationID)
	require.True(t, cgroupHasProcesses(sb.cfg.CgroupRoot, path))
	uid, err := sb.uids.get(uidOwner(sb.state, a.AllocationID))
	require.NoError(t, err)
	running, err := processUIDs()
	require.NoError(t, err)
	require.True(t, running[uid], "its survivors run as its user")

	start := time.Now()
	require.NoError(t, sb.forget(context.Background(), a.AllocationID))
	t.Logf("released in %v", time.Since(start))
	require.False(t, cgroupHasProcesses(sb.cfg.CgroupRoot, path))
	running, err = processUIDs()
	require.NoError(t, err)
	require.False(t, running[uid], "no process of the allocation is left")
	require.NoDirExists(t, sb.domainDir(a.AllocationID))

	next := assignOf("alc_next", 1, 128)
	sb.forgetAtEnd(t, next)
	out, code = sb.runScript(t, next, `ls -A /tmp /dev/shm /work; cat /proc/[0-9]*/cmdline | tr '\0' ' ' | grep -c 'sleep 77[78]'; id -u`)
	require.Zero(t, code, out)
	require.Equal(t, "/dev/shm:\n\n/tmp:\n\n/work:\n0\n"+fmt.Sprint(uid)+"\n", out,
		"nothing of the previous allocation; its id is free again only now")
}

// A user id is not handed out again while a process runs under it.
func TestUIDNotReusedWhileItsProcessesRun(t *testing.T) {
	testenv.Require(t, os.Geteuid() == 0, "needs root to run a process as another user")
	table := &uidTable{path: filepath.Join(t.TempDir(), "uids.json"), base: 250_000, count: 4}
	first, err := table.get("a")
	require.NoError(t, err)
	require.Equal(t, uint32(250_000), first)
	survivor := exec.Command("sleep", "600")
	survivor.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: first, Gid: first}}
	require.NoError(t, survivor.Start())
	t.Cleanup(func() { _ = survivor.Process.Kill(); _ = survivor.Wait() })
	require.Error(t, table.release("a"), "a process of it runs")
	_ = survivor.Process.Kill()
	_ = survivor.Wait()
	require.NoError(t, table.release("a"))
	// A stray process under the next id keeps that one out too.
	stray := exec.Command("sleep", "600")
	stray.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 250_000, Gid: 250_000}}
	require.NoError(t, stray.Start())
	t.Cleanup(func() { _ = stray.Process.Kill(); _ = stray.Wait() })
	next, err := table.get("b")
	require.NoError(t, err)
	require.Equal(t, uint32(250_001), next)
	// Two tables on one file (two daemons on one machine) never share.
	other := &uidTable{path: table.path, base: 250_000, count: 4}
	third, err := other.get("c")
	require.NoError(t, err)
	require.Equal(t, uint32(250_002), third)
}

// The daemon's clock is the judge of a window, with or without a control
// plane: once an allocation's end has passed, the watchdog stops its
// container whole (a setsid survivor included), and no workload of it
// starts any more. No session is open here: the control plane is
// unreachable.
func TestWatchdogStopsAContainerPastItsEnd(t *testing.T) {
	now := time.Now()
	d, sb, j := containerDaemon(t, func() time.Time { return now })
	a := assignment("alc_ends", now.Add(-time.Hour), now.Add(time.Hour), 1, gpu(sb.devices.gpus[0].UUID))
	refused, err := j.assign(a)
	require.NoError(t, err)
	require.Nil(t, refused)
	sb.forgetAtEnd(t, &a)
	res := d.instances.start(context.Background(), sb, j.assignment, wire.Message{}, a.AllocationID,
		commandPayload{InstanceID: "ins_ends", Script: `setsid sh -c 'exec sleep 999' </dev/null >/dev/null 2>&1 & exec sleep 998`})
	require.Empty(t, res.Reason)
	path := sb.cgroupsPath(a.AllocationID)
	require.Eventually(t, func() bool { return hostHas("sleep 999") && hostHas("sleep 998") }, 10*time.Second, 10*time.Millisecond)

	require.Empty(t, d.resync(), "within its window")
	require.True(t, cgroupHasProcesses(sb.cfg.CgroupRoot, path))

	now = now.Add(2 * time.Hour) // past its end, by the daemon's clock
	stopped := d.resync()
	require.Len(t, stopped, 1)
	require.Contains(t, stopped[0].Reason, "ended at")
	require.False(t, cgroupHasProcesses(sb.cfg.CgroupRoot, path), "the container is gone")
	require.False(t, hostHas("sleep 999"), "the setsid survivor too")
	again := d.instances.start(context.Background(), sb, j.assignment, wire.Message{}, a.AllocationID,
		commandPayload{InstanceID: "ins_late", Script: "true"})
	require.Contains(t, again.Reason, "ended at")
}

// Stopping an instance ends every process it started — a setsid one and
// a twice-forked one too — and an instance whose process exits leaves
// nothing running behind it; another instance of the same allocation, and
// the allocation's container, run on. No workload may trace or signal the
// container's init, which would let it start processes outside any
// workload's cgroup.
func TestInstanceEndsWithEveryProcessItStarted(t *testing.T) {
	now := time.Now()
	d, sb, j := containerDaemon(t, func() time.Time { return now })
	a := assignment("alc_tree", now.Add(-time.Hour), now.Add(time.Hour), 1, gpu(sb.devices.gpus[0].UUID))
	refused, err := j.assign(a)
	require.NoError(t, err)
	require.Nil(t, refused)
	sb.forgetAtEnd(t, &a)
	exited := make(chan string, 1)
	d.instances.exited = func(proc *instanceProcess, _ *int32, _ string) { exited <- proc.id }
	start := func(id, script string) {
		t.Helper()
		res := d.instances.start(context.Background(), sb, j.assignment, wire.Message{}, a.AllocationID,
			commandPayload{InstanceID: id, Script: script})
		require.Empty(t, res.Reason)
		// The output reaches the tenant (node.command.succeeded): it names
		// the instance and not the host's process id.
		require.Equal(t, "instance "+id+" started", res.Output)
	}
	const leave = `setsid sh -c 'exec sleep %d' </dev/null >/dev/null 2>&1 & (sh -c 'exec sleep %d' </dev/null >/dev/null 2>&1 &); `
	start("ins_other", "exec sleep 901")
	start("ins_stop", fmt.Sprintf(leave, 902, 903)+"sleep 904")
	require.Eventually(t, func() bool {
		return hostHas("sleep 901") && hostHas("sleep 902") && hostHas("sleep 903") && hostHas("sleep 904")
	},
		10*time.Second, 10*time.Millisecond)

	res := d.instances.stop(wire.Message{}, commandPayload{InstanceID: "ins_stop"}, 100*time.Millisecond)
	require.Equal(t, "instance ins_stop stopped", res.Output)
	for _, gone := range []string{"sleep 902", "sleep 903", "sleep 904"} {
		require.False(t, hostHas(gone), "%s outlived its stopped instance", gone)
	}
	require.True(t, hostHas("sleep 901"), "the allocation's other instance runs on")

	gate := filepath.Join(sb.domainDir(a.AllocationID), "work", "instances", "ins_exit", "go")
	start("ins_exit", fmt.Sprintf(leave, 905, 906)+"while [ ! -e go ]; do sleep 0.01; done")
	require.Eventually(t, func() bool { return hostHas("sleep 905") && hostHas("sleep 906") }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	select {
	case id := <-exited:
		require.Equal(t, "ins_exit", id)
	case <-time.After(10 * time.Second):
		t.Fatal("the instance never exited")
	}
	require.False(t, hostHas("sleep 905"), "a twice-forked process outlived its instance")
	require.False(t, hostHas("sleep 906"), "a setsid process outlived its instance")
	require.True(t, hostHas("sleep 901"))
	require.True(t, cgroupHasProcesses(sb.cfg.CgroupRoot, sb.cgroupsPath(a.AllocationID)), "the container runs on")
	groups, err := filepath.Glob(filepath.Join(DefaultCgroupRoot, "freezer", sb.cgroupsPath(a.AllocationID), "process-*"))
	require.NoError(t, err)
	require.Len(t, groups, 1, "only the running instance's cgroup is left: %v", groups)

	// The container's init is not the workloads' to trace or signal: from
	// it, a traced init could start processes in no workload's cgroup.
	out, code := sb.runScript(t, &a, `kill -0 1 2>&1 || true; cat /proc/1/environ >/dev/null 2>&1 && echo traced || echo denied`)
	require.Zero(t, code, out)
	require.Contains(t, out, "Operation not permitted")
	require.True(t, strings.HasSuffix(out, "denied\n"), out)
}

// What an allocation holds on the node's file system counts whatever hides
// it from a walk of /work: a file deleted but still open counts its blocks
// (one process keeps it while the allocation writes), and many tiny files
// count against the node's inodes; an allocation that asked for no disk
// still has a small allowance and keeps running within it. (On a node
// that only measures: where /work is a file system of its own, the kernel
// refuses all of these writes past the disk first.)
func TestContainerDiskCountsHiddenFilesAndInodes(t *testing.T) {
	now := time.Now()
	d, sb := measuredDaemon(t, func() time.Time { return now })
	j := d.journal
	hidden := assignment("alc_hidden", now.Add(-time.Hour), now.Add(time.Hour), 1)
	hidden.DiskGB = 1
	many := assignment("alc_many", now.Add(-time.Hour), now.Add(time.Hour), 2)
	many.DiskGB = 0 // 64 MiB, 4,096 files
	modest := assignment("alc_modest", now.Add(-time.Hour), now.Add(time.Hour), 3)
	modest.DiskGB = 0
	d.sleepIn(t, j, hidden, many, modest)
	requireFree(t, sb.root, 2<<30)
	out, code := sb.runScript(t, &hidden, `exec 3<>/work/hidden && rm /work/hidden && fallocate -l 1100M /proc/$$/fd/3 && `+
		`{ setsid sleep 600 </dev/null >/dev/null 2>&1 & } && ls -A /work && echo ok`)
	require.Zero(t, code, out)
	require.Equal(t, "instances\nok\n", out, "nothing but the instance's directory under /work: the file is deleted, its 1.1 GB held open")
	out, code = sb.runScript(t, &many, `mkdir /work/many && cd /work/many && i=0; while [ $i -lt 5000 ]; do : > f$i; i=$((i+1)); done; echo ok`)
	require.Zero(t, code, out)
	out, code = sb.runScript(t, &modest, `head -c 10000000 /dev/zero > /work/ten-mb && echo ok`)
	require.Zero(t, code, out)

	stopped := d.checkDisk()
	reasons := map[string]string{}
	for _, s := range stopped {
		reasons[s.InstanceID] = s.Reason
	}
	require.Len(t, reasons, 2, "%v", reasons)
	require.Contains(t, reasons["ins_alc_hidden"], wire.ReasonDiskExceeded+": /work uses 1.07 GiB of its 1 GB")
	require.Contains(t, reasons["ins_alc_many"], "/work holds 500", "5,000 files and their directories over 4,096")
	require.Contains(t, reasons["ins_alc_many"], "at most 4096 for the 64 MiB of a reservation without diskGb")
	require.False(t, cgroupHasProcesses(sb.cfg.CgroupRoot, sb.cgroupsPath("alc_hidden")), "its container is gone, the held file with it")
	require.True(t, cgroupHasProcesses(sb.cfg.CgroupRoot, sb.cgroupsPath("alc_modest")), "10 MB of no diskGb run on")
}

// measuredDaemon is a container daemon (containerDaemon) whose
// allocations' /work are directories of the node's file system, only
// measured, as on a node where they cannot be file systems of their own:
// the measurement alone must hold them.
func measuredDaemon(t *testing.T, now func() time.Time) (*daemon, *sandbox) {
	t.Helper()
	d, sb, _ := containerDaemon(t, now)
	sb.workfs, sb.diskLimit = nil, diskMeasured
	return d, sb
}

// sleepIn assigns each allocation to d's daemon (released when the test
// ends) and starts an instance ins_<allocation> sleeping in it.
func (d *daemon) sleepIn(t *testing.T, j *journal, as ...wire.AssignPayload) {
	t.Helper()
	for _, a := range as {
		refused, err := j.assign(a)
		require.NoError(t, err)
		require.Nil(t, refused)
		d.sandbox.forgetAtEnd(t, &a)
		res := d.instances.start(context.Background(), d.sandbox, j.assignment, wire.Message{}, a.AllocationID,
			commandPayload{InstanceID: "ins_" + a.AllocationID, Script: "exec sleep 600"})
		require.Empty(t, res.Reason)
	}
}

// requireFree skips the test unless dir's file system has bytes free.
func requireFree(t *testing.T, dir string, bytes int64) {
	t.Helper()
	var fsStat unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &fsStat))
	if free := int64(fsStat.Bavail) * fsStat.Bsize; free < bytes {
		t.Skipf("needs %d MiB free where the workloads live, has %d MiB", bytes>>20, free>>20)
	}
}

// hostHas reports whether a process of the machine runs a command line
// starting with prefix.
func hostHas(prefix string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && strings.HasPrefix(strings.ReplaceAll(string(b), "\x00", " "), prefix) {
			return true
		}
	}
	return false
}

// An allocation whose /work outgrows its diskGb has its workloads stopped,
// its container deleted and its /work emptied, reason DiskExceeded, and
// runs nothing more until it is released; one within its disk runs on.
// (On a node that only measures; TestContainerDiskIsAFileSystemOfItsSize
// reclaims a /work that is a file system.)
func TestContainerDiskExceeded(t *testing.T) {
	now := time.Now()
	d, sb := measuredDaemon(t, func() time.Time { return now })
	j := d.journal
	big := assignment("alc_big", now.Add(-time.Hour), now.Add(time.Hour), 1)
	big.DiskGB = 1
	small := assignment("alc_small", now.Add(-time.Hour), now.Add(time.Hour), 2)
	small.DiskGB = 1
	d.sleepIn(t, j, big, small)
	requireFree(t, sb.root, 3<<30)
	out, code := sb.runScript(t, &big, "fallocate -l 1100M /work/fill && echo ok")
	require.Zero(t, code, out)
	out, code = sb.runScript(t, &small, "fallocate -l 100M /work/fill && echo ok")
	require.Zero(t, code, out)

	stopped := d.checkDisk()
	require.Len(t, stopped, 1)
	require.Equal(t, "ins_alc_big", stopped[0].InstanceID)
	require.Contains(t, stopped[0].Reason, wire.ReasonDiskExceeded)
	require.False(t, cgroupHasProcesses(sb.cfg.CgroupRoot, sb.cgroupsPath("alc_big")), "its container is gone")
	require.True(t, cgroupHasProcesses(sb.cfg.CgroupRoot, sb.cgroupsPath("alc_small")), "the other runs on")
	require.Equal(t, int64(1), workUsage(sb.workDir("alc_big"), nil).files,
		"the node's disk is given back at once, not at the release: /work is empty")
	require.Positive(t, workUsage(sb.workDir("alc_small"), nil).bytes, "the other's files stay")
	_, err := sb.workload(context.Background(), &big, "true", ".")
	require.ErrorContains(t, err, wire.ReasonDiskExceeded)
	require.Empty(t, d.checkDisk(), "stopped once")
}

// Two daemons on one machine with the same node id (a second fleet's, a
// demo next to a node's daemon) have their allocations' cgroups under the
// same /compute/<node>. Neither's watchdog takes the other's allocation
// for a container it forgot: it would kill another daemon's tenants.
func TestWatchdogLeavesAnotherDaemonsContainers(t *testing.T) {
	sb := containerSandbox(t)
	a := assignOf("alc_neighbours", 1, 128)
	sb.forgetAtEnd(t, a)
	out, code := sb.runScript(t, a, `setsid sleep 778 </dev/null >/dev/null 2>&1 & echo ok`)
	require.Zero(t, code, out)
	path := sb.cgroupsPath(a.AllocationID)
	require.True(t, cgroupHasProcesses(sb.cfg.CgroupRoot, path))

	// The same node id, a workload root and state of its own.
	root, err := os.MkdirTemp("", "compute-ct-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	cfg := sb.cfg
	cfg.StateDir, cfg.WorkloadDir = t.TempDir(), root
	gpus, err := inventoryGPUs(context.Background(), cfg.NodeID, cfg.FakeGPUs)
	require.NoError(t, err)
	other, err := openSandbox(context.Background(), cfg, gpus)
	require.NoError(t, err)
	require.NotContains(t, other.containers(context.Background()), a.AllocationID,
		"another daemon's allocation is not this daemon's container")
	require.Contains(t, sb.containers(context.Background()), a.AllocationID)
}

// A daemon whose state directory was wiped while an allocation's container
// ran (runc's state is in it) no longer knows that container. Its
// processes, one that ignores SIGTERM included, still go with the
// allocation: the watchdog lists the allocation from its cgroup, and the
// release kills what is in the cgroup instead of failing forever.
func TestReleaseKillsAContainerRuncForgot(t *testing.T) {
	sb := containerSandbox(t)
	a := assignOf("alc_forgotten", 1, 128)
	out, code := sb.runScript(t, a, `setsid sh -c "trap '' TERM; exec sleep 779" </dev/null >/dev/null 2>&1 & echo ok`)
	require.Zero(t, code, out)
	path := sb.cgroupsPath(a.AllocationID)
	require.True(t, cgroupHasProcesses(sb.cfg.CgroupRoot, path))

	// The same node and workload root, a fresh state directory: runc's
	// state is gone, the container runs on.
	cfg := sb.cfg
	cfg.StateDir = t.TempDir()
	gpus, err := inventoryGPUs(context.Background(), cfg.NodeID, cfg.FakeGPUs)
	require.NoError(t, err)
	again, err := openSandbox(context.Background(), cfg, gpus)
	require.NoError(t, err)
	t.Cleanup(func() { _ = killCgroupTree(cfg.CgroupRoot, path); _ = sb.forget(context.Background(), a.AllocationID) })
	require.Contains(t, again.containers(context.Background()), a.AllocationID,
		"the watchdog sees the allocation's container")

	require.NoError(t, again.forget(context.Background(), a.AllocationID))
	require.False(t, cgroupHasProcesses(cfg.CgroupRoot, path), "nothing of the allocation is left")
	// Nor its cgroup: runc, which would have deleted it with the
	// container, no longer knows it, so the daemon does.
	require.Empty(t, cgroupDirs(cfg.CgroupRoot, path), "the released allocation's cgroup directories are gone")
}

// cgroupDirs are the directories of the cgroup at path in every hierarchy
// (one on v2), those below it included.
func cgroupDirs(root, path string) []string {
	if root == "" {
		root = DefaultCgroupRoot
	}
	tops := []string{root}
	if !cgroupV2(root) {
		entries, _ := os.ReadDir(root)
		tops = nil
		for _, e := range entries {
			if e.IsDir() {
				tops = append(tops, filepath.Join(root, e.Name()))
			}
		}
	}
	var dirs []string
	for _, top := range tops {
		_ = filepath.WalkDir(filepath.Join(top, path), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	return dirs
}
