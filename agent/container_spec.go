package agent

import (
	"os"
	"path/filepath"
	"strconv"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The container of an allocation: its OCI runtime spec.
//
// The allocation is the unit of isolation, as a Kubernetes pod is: one
// container per allocation, whose first process only waits, and every
// workload of the allocation (instances, exec jobs) a `runc exec` into it,
// so they share its cgroup (limits), its namespaces and its work
// directory, and nothing with any other allocation.
//
// The root filesystem is the host's system directories bound read-only
// (the node's tools, libraries and driver), with a private writable
// /work (the allocation's directory), private /tmp and /dev/shm (tmpfs of
// a bounded size) and a private /proc (its own pid namespace). The
// process runs as the allocation's user, with no capabilities,
// no_new_privs, the kernel paths containers conventionally mask, and a
// seccomp filter (seccomp.go). Its network namespace is its own with only
// loopback: nothing on the node's addresses, the node's loopback
// included, can be reached.

// hostDirs are the host's directories a workload sees, read-only. Those
// that are symbolic links on the host (a merged /usr) are links in the
// container too.
var hostDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// maskedPaths and readonlyPaths are runc's defaults (`runc spec`): kernel
// interfaces a container has no business reading or writing. To them
// maskedPaths adds the node's virtual block devices (where /sys/block,
// /sys/class/block and /sys/dev/block lead), every allocation's /work
// loop device among them: its backing file, readable by every user,
// names its allocation, so that a workload would learn which others
// share its node.
var (
	maskedPaths = []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi",
		"/sys/devices/virtual/powercap", "/sys/devices/virtual/block"}
	readonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// workDir is where the allocation's directory appears in its container.
const workDir = "/work"

// podParams is what an allocation's container is made of.
type podParams struct {
	// RootFS is the empty, root-owned directory the container's root is
	// built on; Work the allocation's writable directory.
	RootFS, Work string
	UID          uint32
	Hostname     string
	// CgroupsPath is the container's cgroup, relative to each hierarchy's
	// root: /compute/<node>/<allocation>.
	CgroupsPath string
	Limits      limits
	// KeeperDir is the directory of the keeper's deadline, bound
	// read-only at keeperDir ("": none, the keeper never ends by itself).
	KeeperDir string
	// Keeper is the keeper's command line (keeperArgs).
	Keeper []string
	// Rlimits are the keeper's resource limits, every workload's too
	// (workloadRlimits).
	Rlimits []specs.POSIXRlimit
}

// limits are an allocation's share of the node, as the kernel enforces it.
// An allocation that reserved no vCPU or no memory runs best effort in
// that resource, as Kubernetes runs a pod that requests nothing: it gets
// the CPU time no reservation is using (bestEffortShares, no quota), and
// its memory has no hard limit but its workloads are the first the
// kernel's OOM killer takes (bestEffortOOMScoreAdj) when the node runs
// short. Either way a tenant that reserved nothing cannot take from one
// that reserved.
type limits struct {
	VCPU     int64 // CPU quota: VCPU CPUs' worth of time per period; 0: best effort
	MemoryMB int64 // memory (and memory+swap) hard limit; 0: best effort
	Pids     int64 // processes and threads; 0: none
	TmpMB    int64 // size of /tmp
	ShmMB    int64 // size of /dev/shm
}

// cpuPeriod is the CFS period the CPU quota is a share of, in µs.
const cpuPeriod = 100000

// The CPU weight of an allocation is its vCPUs' worth (sharesPerVCPU
// each, the kernel's default weight of one task group), so that under
// contention reserved CPU is shared in proportion to what was reserved;
// one that reserved none weighs bestEffortShares, the kernel's least:
// it runs when no one else wants the CPU.
const (
	sharesPerVCPU    = 1024
	maxShares        = 262144 // the kernel's largest cpu.shares
	bestEffortShares = 2
)

// bestEffortOOMScoreAdj makes the workloads of an allocation without a
// memory limit the OOM killer's first choice on their node. Those with a
// limit get 0: the kernel kills inside their cgroup when they reach it,
// and none inherits the daemon's own protection (ProtectFromOOMKiller).
const bestEffortOOMScoreAdj = 1000

// keeperUID is the user the pod's keeper runs as: nobody, never the
// allocation's own user, so that no workload can ptrace the container's
// init (and from there start processes outside its own cgroup, or stop it
// reaping orphans) or signal it.
const keeperUID = 65534

// podSpec is the OCI runtime spec of an allocation's container. Its
// process is the pod's keeper: it ignores SIGTERM (a stop's TERM is for
// the workloads), reaps what is orphaned into it, and ends the container
// at its deadline (keeper_deadline.go). It runs as
// keeperUID, in /, which the allocation's /work (its user's only) is not,
// with the rlimits every workload has (rlimits.go).
func podSpec(p podParams) *specs.Spec {
	noCaps := &specs.LinuxCapabilities{Bounding: []string{}, Effective: []string{}, Inheritable: []string{},
		Permitted: []string{}, Ambient: []string{}}
	s := &specs.Spec{
		Version:  specs.Version,
		Hostname: p.Hostname,
		Root:     &specs.Root{Path: p.RootFS, Readonly: true},
		Process: &specs.Process{
			User: specs.User{UID: keeperUID, GID: keeperUID},
			Args: p.Keeper,
			Env:  []string{"PATH=" + workloadPath},
			Cwd:  "/", NoNewPrivileges: true, Capabilities: noCaps,
			Rlimits:     p.Rlimits,
			OOMScoreAdj: oomScoreAdj(p.Limits),
		},
		Mounts: podMounts(p),
		Linux: &specs.Linux{
			CgroupsPath: p.CgroupsPath,
			Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.MountNamespace},
				{Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}, {Type: specs.NetworkNamespace}},
			Resources:     resources(p.Limits),
			MaskedPaths:   maskedPaths,
			ReadonlyPaths: readonlyPaths,
			Seccomp:       seccompProfile(),
			Sysctl:        ipcSysctls(p.Limits),
		},
	}
	return s
}

// resources are the cgroup settings of an allocation: every device denied
// but those added to the list after this rule (its GPUs, through CDI;
// runc adds /dev/null and the other harmless defaults), and its limits.
func resources(l limits) *specs.LinuxResources {
	r := &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}}
	if l.MemoryMB > 0 {
		b := l.MemoryMB << 20
		r.Memory = &specs.LinuxMemory{Limit: &b, Swap: &b}
	}
	shares := uint64(bestEffortShares)
	r.CPU = &specs.LinuxCPU{Shares: &shares}
	if l.VCPU > 0 {
		shares = uint64(min(l.VCPU*sharesPerVCPU, maxShares))
		quota, period := l.VCPU*cpuPeriod, uint64(cpuPeriod)
		r.CPU.Quota, r.CPU.Period = &quota, &period
	}
	if l.Pids > 0 {
		pids := l.Pids
		r.Pids = &specs.LinuxPids{Limit: &pids}
	}
	return r
}

// ipcSysctls bound the System V IPC objects of an allocation's IPC
// namespace. Such an object outlives the process that made it, until the
// namespace goes at the release, and the OOM killer frees none of its
// memory; a fresh namespace's defaults allow more than the node has
// (shared memory without limit, a billion semaphores, 32,000 message
// queues), so an allocation without a memory limit could pin the node's
// memory past any OOM kill. Shared memory gets /dev/shm's size (the
// same pages, by another interface); semaphores and message queues the
// kernel's classic defaults: 128 sets of 250 (32,000 semaphores, a few
// MiB) and 32 queues.
func ipcSysctls(l limits) map[string]string {
	shm := l.ShmMB << 20
	return map[string]string{
		"kernel.shmmax": strconv.FormatInt(shm, 10),
		"kernel.shmall": strconv.FormatInt(shm/int64(os.Getpagesize()), 10),
		"kernel.sem":    "250 32000 500 128",
		"kernel.msgmni": "32",
	}
}

// oomScoreAdj is the OOM score adjustment of every process of an
// allocation's container: the keeper's, which runc applies to each
// process it executes there too.
func oomScoreAdj(l limits) *int {
	adj := 0
	if l.MemoryMB <= 0 {
		adj = bestEffortOOMScoreAdj
	}
	return &adj
}

// maxPTYs is how many pseudo-terminals an allocation's /dev/pts holds.
// The node's are shared by every container (kernel.pty.max, 4,096 by
// default, less the 1,024 reserved to the node's own /dev/pts): without a
// bound one allocation could open them all and leave every other without
// any. 64 keep the node's default enough for 48 allocations.
const maxPTYs = 64

// podMounts are the container's file systems (see podSpec).
func podMounts(p podParams) []specs.Mount {
	ms := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs",
			Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts",
			Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "max=" + strconv.Itoa(maxPTYs)}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm",
			Options: []string{"nosuid", "noexec", "nodev", "mode=1777", tmpfsSize(p.Limits.ShmMB), tmpfsInodes(p.Limits.ShmMB)}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs",
			Options: []string{"nosuid", "nodev", "mode=1777", tmpfsSize(p.Limits.TmpMB), tmpfsInodes(p.Limits.TmpMB)}},
		{Destination: workDir, Type: "bind", Source: p.Work, Options: []string{"rbind", "rw", "nosuid", "nodev"}},
	}
	if p.KeeperDir != "" {
		ms = append(ms, specs.Mount{Destination: keeperDir, Type: "bind", Source: p.KeeperDir,
			Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}})
	}
	for _, d := range hostDirs {
		if st, err := os.Lstat(d); err != nil || !st.IsDir() {
			continue // absent, or a link made in the root (podRootFS)
		}
		ms = append(ms, specs.Mount{Destination: d, Type: "bind", Source: d,
			Options: []string{"rbind", "ro", "nosuid", "nodev"}})
	}
	return ms
}

// tmpfsSize is the size option of a tmpfs of mb MiB.
func tmpfsSize(mb int64) string { return "size=" + strconv.FormatInt(mb, 10) + "m" }

// tmpfsInodes is the number of inodes of a tmpfs of mb MiB: one per
// 16 KiB, as /work has. Its size bounds only its files' pages; every
// file, empty or not, is also an inode and a dentry of the kernel's
// memory (about 1 KiB), which no OOM kill frees, and the kernel's default
// (half the node's pages) would let an allocation without a memory limit
// hold gigabytes of it in an empty /tmp.
func tmpfsInodes(mb int64) string { return "nr_inodes=" + strconv.FormatInt(mb*64, 10) }

// podRootFS prepares the container's root directory: the host's
// directories that are symbolic links (a merged /usr: /bin -> usr/bin)
// are the same links there. Everything else is a mount point runc makes.
func podRootFS(rootfs string) error {
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return err
	}
	// Whatever the daemon's umask: the workload's user must be able to
	// enter its own root.
	if err := os.Chmod(rootfs, 0o755); err != nil {
		return err
	}
	// runc gives a tmpfs the mode of the directory it is mounted on when
	// that directory exists, as /tmp's does from the allocation's previous
	// container on (after the daemon's graceful restart, a reboot): made
	// 1777 here, /tmp stays every user's, sticky, in every container.
	tmp := filepath.Join(rootfs, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil && !os.IsExist(err) {
		return err
	}
	if err := os.Chmod(tmp, 0o777|os.ModeSticky); err != nil {
		return err
	}
	for _, d := range hostDirs {
		st, err := os.Lstat(d)
		if err != nil || st.Mode()&os.ModeSymlink == 0 {
			continue
		}
		target, err := os.Readlink(d)
		if err != nil {
			return err
		}
		link := filepath.Join(rootfs, d)
		if err := os.Symlink(target, link); err != nil && !os.IsExist(err) {
			return err
		}
	}
	return nil
}

// workloadPath is the PATH of every workload.
const workloadPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// workloadProcess is a workload of the allocation: sh -c script as the
// allocation's user, in workDir/<dir> (made by the workload itself, as its
// user: the daemon never creates anything inside a tenant's directory),
// with env, no capabilities, no_new_privs and rlimits (workloadRlimits). A
// `runc exec` gets the rlimits its own spec names (naming none, the
// container's) and every other as the daemon has it; naming them all here
// also covers a container an earlier daemon made with none.
func workloadProcess(uid uint32, dir, script string, env []string, rlimits []specs.POSIXRlimit) specs.Process {
	noCaps := &specs.LinuxCapabilities{Bounding: []string{}, Effective: []string{}, Inheritable: []string{},
		Permitted: []string{}, Ambient: []string{}}
	return specs.Process{
		User: specs.User{UID: uid, GID: uid},
		Args: []string{"/bin/sh", "-c", `mkdir -p -- "$1" && cd -- "$1" && exec /bin/sh -c "$2"`, "sh", dir, script},
		Env:  env, Cwd: workDir, NoNewPrivileges: true, Capabilities: noCaps,
		Rlimits: rlimits,
	}
}
