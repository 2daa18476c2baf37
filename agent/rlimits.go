package agent

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// The resource limits (setrlimit) of every process of an allocation's
// container: chosen here, not inherited from the daemon, which only caps
// them where it cannot grant more (workloadRlimits).
//
// runc applies a process's rlimits from its spec and leaves every limit
// the spec does not name as the process that started runc had it: without
// this list a workload would get whatever the node daemon was started with
// (a shell's `ulimit`, a systemd unit's Limit* lines, another init's
// defaults), and the same reservation would behave differently from one
// node to the next. Every limit the kernel has is named, so nothing is left
// to the daemon's environment. The cgroup limits (memory, CPU, pids), the
// sizes of /work, /tmp and /dev/shm and the IPC sysctls are what bound an
// allocation's share of the node; an rlimit is chosen tight only where it
// bounds something those do not, and otherwise where a GPU workload needs
// it to be (NVIDIA's advice for its containers: `--ulimit memlock=-1
// --ulimit stack=67108864`).

// rlimitInfinity is RLIM_INFINITY: no limit.
const rlimitInfinity = math.MaxUint64

// The chosen values that are neither 0 nor unlimited (docs/security.md,
// "Process limits").
const (
	// nofileSoft and nofileHard bound open file descriptors. The hard
	// limit is the kernel's default fs.nr_open (no process can be given
	// more without a sysctl) and 2^20, what Docker's unit once set; the
	// soft limit is what a workload gets without asking, high enough for
	// what GPU stacks open without raising it themselves (PyTorch's
	// DataLoader passes shared tensors as descriptors, NCCL and Gloo open
	// sockets per peer), far enough below 2^20 that a program which closes
	// every possible descriptor before exec does not loop a million times.
	// containerd's default spec and `runc spec` give 1024/1024, Docker 25
	// and containerd 2.0 systemd's default (1024/524288): too low a soft
	// limit for these workloads; Bottlerocket's containerd gives these.
	// Descriptors cost kernel memory that is charged to the allocation's
	// memory cgroup, so the number bounds no other tenant's share.
	nofileSoft = 65536
	nofileHard = 1 << 20
	// stackSoft is the main thread's stack, and glibc's default for every
	// other thread's: NVIDIA's 64 MiB. Only touched pages are memory, and
	// they are the allocation's own.
	stackSoft = 64 << 20
	// msgqueueBytes bounds the POSIX message queues of the allocation's
	// user (the kernel's default, 800 KiB: nine queues of ten 8 KiB
	// messages). Like System V IPC objects (ipcSysctls) a queue outlives
	// its processes, until the IPC namespace goes at the release, and no
	// OOM kill frees it; a fixed number keeps that small whatever the
	// memory limit.
	msgqueueBytes = 819200
	// sigpendingMax bounds the signals queued to the allocation's user
	// (each ~90 bytes of kernel memory, charged to its memory cgroup, freed
	// when its receiver exits). The kernel's default grows with the node's
	// memory; a fixed number makes a workload see the same on every node.
	sigpendingMax = 65536
)

// chosenRlimits are the rlimits of every process the daemon starts in an
// allocation's container: the keeper and every workload (instance or exec
// job) alike. Each is soft and hard unless said otherwise:
//
//   - RLIMIT_MEMLOCK unlimited. ibverbs registers (pins) memory against
//     it, so NCCL's InfiniBand and RoCE transports and GPUDirect RDMA fail
//     under the kernel's 8 MiB default. The limit counts per process (per
//     user for SHM_LOCK and registrations) and never bounded an
//     allocation's total; its memory cgroup does, locked pages included:
//     past its memory limit the allocation's OOM killer kills holders of
//     locked memory (TestContainerLockedMemoryIsChargedToTheAllocation).
//     One without a memory limit can lock what it could allocate anyway,
//     as the OOM killer's first choice, and its locked pages go with it.
//   - RLIMIT_CORE 0, and the workload cannot raise it. The node's
//     kernel.core_pattern is not the container's. A pipe there runs a
//     program of the node, as root, on the workload's memory (the kernel
//     runs it whatever the limit, and passes the limit as %c), and keeps
//     the tenant's memory on the node's disk past its release:
//     systemd-coredump honours the limit and stores nothing at 0. A plain
//     name writes into the crashing process's cwd, the tenant's /work,
//     where a GPU process's core (gigabytes of mapped memory) would fill
//     the disk its files need.
//   - RLIMIT_NOFILE nofileSoft, hard nofileHard (above).
//   - RLIMIT_STACK stackSoft, hard unlimited (above).
//   - RLIMIT_RTPRIO 0 and RLIMIT_NICE 0: no real-time scheduling and no
//     priority above the default. The CPU quota and shares bound normal
//     tasks only: a SCHED_FIFO task (where the kernel has no real-time
//     group scheduling to refuse it) would take a CPU from every other
//     allocation on it. RLIMIT_RTTIME, which only real-time tasks use, is
//     unlimited.
//   - RLIMIT_MSGQUEUE msgqueueBytes, RLIMIT_SIGPENDING sigpendingMax
//     (above). Both count per user id, and an allocation's user id is its
//     own (uids.go), so neither can be used up by another tenant.
//   - RLIMIT_NPROC unlimited. It counts per user id across the whole node:
//     the keeper's user, nobody, is shared by every allocation's keeper
//     (and the node's own daemons), so any number would let allocations
//     starve each other's keepers; a workload's user is its allocation's
//     alone, and the pids cgroup already bounds its processes and threads.
//   - RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_DATA, RLIMIT_AS, RLIMIT_RSS and
//     RLIMIT_LOCKS unlimited: the CPU cgroup and the window bound CPU time,
//     the /work file system and the tmpfs sizes bound files, the memory
//     cgroup bounds memory (CUDA reserves terabytes of address space, so
//     any finite RLIMIT_AS breaks it), and the kernel enforces neither
//     RLIMIT_RSS nor RLIMIT_LOCKS.
func chosenRlimits() []rlimit {
	return []rlimit{
		{"RLIMIT_MEMLOCK", unix.RLIMIT_MEMLOCK, rlimitInfinity, rlimitInfinity},
		{"RLIMIT_CORE", unix.RLIMIT_CORE, 0, 0},
		{"RLIMIT_NOFILE", unix.RLIMIT_NOFILE, nofileSoft, nofileHard},
		{"RLIMIT_STACK", unix.RLIMIT_STACK, stackSoft, rlimitInfinity},
		{"RLIMIT_RTPRIO", unix.RLIMIT_RTPRIO, 0, 0},
		{"RLIMIT_NICE", unix.RLIMIT_NICE, 0, 0},
		{"RLIMIT_RTTIME", unix.RLIMIT_RTTIME, rlimitInfinity, rlimitInfinity},
		{"RLIMIT_MSGQUEUE", unix.RLIMIT_MSGQUEUE, msgqueueBytes, msgqueueBytes},
		{"RLIMIT_SIGPENDING", unix.RLIMIT_SIGPENDING, sigpendingMax, sigpendingMax},
		{"RLIMIT_NPROC", unix.RLIMIT_NPROC, rlimitInfinity, rlimitInfinity},
		{"RLIMIT_CPU", unix.RLIMIT_CPU, rlimitInfinity, rlimitInfinity},
		{"RLIMIT_FSIZE", unix.RLIMIT_FSIZE, rlimitInfinity, rlimitInfinity},
		{"RLIMIT_DATA", unix.RLIMIT_DATA, rlimitInfinity, rlimitInfinity},
		{"RLIMIT_AS", unix.RLIMIT_AS, rlimitInfinity, rlimitInfinity},
		{"RLIMIT_RSS", unix.RLIMIT_RSS, rlimitInfinity, rlimitInfinity},
		{"RLIMIT_LOCKS", unix.RLIMIT_LOCKS, rlimitInfinity, rlimitInfinity},
	}
}

// rlimit is one resource limit: its OCI name, its number for getrlimit,
// and its soft and hard values.
type rlimit struct {
	name       string
	resource   int
	soft, hard uint64
}

// daemonLimits is what the daemon can hand its containers: runc sets a
// container's rlimits as the daemon's user, and raising a hard limit above
// the daemon's own takes CAP_SYS_RESOURCE, which the agent's unit keeps but
// a daemon in a restricted environment (a container itself, a test
// machine) may lack.
type daemonLimits struct {
	canRaise bool
	hard     map[int]uint64 // the daemon's own hard limits, by resource
	// nrOpen is the node's fs.nr_open, above which no process may have
	// RLIMIT_NOFILE, capability or not (0: unknown). The kernel's default
	// is nofileHard; systemd raises it to 2^30.
	nrOpen uint64
}

// currentDaemonLimits reads the daemon's capability and hard limits.
func currentDaemonLimits() daemonLimits {
	d := daemonLimits{hard: map[int]uint64{}}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) == nil {
		d.canRaise = data[unix.CAP_SYS_RESOURCE/32].Effective&(1<<(unix.CAP_SYS_RESOURCE%32)) != 0
	}
	for _, r := range chosenRlimits() {
		var l unix.Rlimit
		if unix.Getrlimit(r.resource, &l) == nil {
			d.hard[r.resource] = l.Max
		}
	}
	if b, err := os.ReadFile("/proc/sys/fs/nr_open"); err == nil {
		d.nrOpen, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	return d
}

// workloadRlimits are the chosen rlimits (chosenRlimits) as runc can set
// them under d: where the daemon cannot raise a hard limit above its own,
// that limit is the daemon's hard limit instead, and RLIMIT_NOFILE is at
// most the node's fs.nr_open (runc would otherwise fail to start every
// container); lowered names each such limit, for the daemon to say so at
// start.
func workloadRlimits(d daemonLimits) (rs []specs.POSIXRlimit, lowered []string) {
	for _, r := range chosenRlimits() {
		hard := r.hard
		if own, ok := d.hard[r.resource]; ok && !d.canRaise {
			hard = min(hard, own)
		}
		if r.resource == unix.RLIMIT_NOFILE && d.nrOpen > 0 {
			hard = min(hard, d.nrOpen)
		}
		if hard != r.hard {
			lowered = append(lowered, fmt.Sprintf("%s %s (chosen %s)", r.name, rlimitText(hard), rlimitText(r.hard)))
		}
		rs = append(rs, specs.POSIXRlimit{Type: r.name, Soft: min(r.soft, hard), Hard: hard})
	}
	return rs, lowered
}

// openRlimits decides the rlimits of the containers' processes, and says
// at start when they are lower than the chosen ones because the daemon
// cannot raise its own (docs/security.md, "Process limits").
func (s *sandbox) openRlimits(d daemonLimits) {
	var lowered []string
	s.rlimits, lowered = workloadRlimits(d)
	if len(lowered) == 0 {
		s.log.Info("workload rlimits: as chosen")
		return
	}
	s.log.Warn("workload rlimits: some are lower than chosen: the daemon lacks CAP_SYS_RESOURCE and cannot raise "+
		"a hard limit above its own (give it the capability, or raise its own limits), or fs.nr_open is below "+
		"the chosen open files", "lowered", strings.Join(lowered, ", "))
}

// rlimitText is a limit as /proc/<pid>/limits writes it.
func rlimitText(v uint64) string {
	if v == rlimitInfinity {
		return "unlimited"
	}
	return strconv.FormatUint(v, 10)
}
