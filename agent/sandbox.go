package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/bettercompute/compute/wire"
)

// Workload isolation modes (--workload-isolation).
const (
	// IsolationContainer runs each allocation's workloads in a container
	// of its own, through runc (container_spec.go). It needs root and a
	// working runc; without them the daemon refuses tenants' workloads.
	IsolationContainer = "container"
	// IsolationNone runs workloads as plain processes of the daemon's own
	// user: for a development machine only, where no tenant is hostile.
	IsolationNone = "none"
)

// DefaultWorkloadDir is the root of the allocations' directories: root's,
// and no other user may write into it or any directory above it.
const DefaultWorkloadDir = "/var/lib/compute-agent/workloads"

// DefaultPidsPerVCPU is the processes-and-threads limit of an allocation
// per vCPU it holds (at least minPids).
const (
	DefaultPidsPerVCPU = 512
	minPids            = 256
)

// workloadWaitDelay bounds how long a finished or killed workload may keep
// its output pipes open through a leftover child before they are closed.
const workloadWaitDelay = 5 * time.Second

// fleetDomain is the security domain of an operator's node job that names
// no allocation: a container of its own, with no GPU.
const fleetDomain = "fleet"

// validDomain is what an allocation id must look like to name a directory
// and a container.
var validDomain = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// sandbox keeps tenants' workloads apart from each other and from the
// node (see container_spec.go for what the container is made of).
//
// Everything an allocation has on the node is named by it: its directory
// <root>/<allocation> (root's, 0700) holding the container's bundle, its
// empty root, its work directory (the allocation user's) and the image of
// the file system mounted on it (workfs.go); its
// container (runc id = the allocation id); its cgroup
// /compute/<node>/<allocation>; and its user id, from the machine's
// table (uids.go). forget removes them all, in that order, once the
// container's every process is dead.
type sandbox struct {
	mode    string
	root    string
	nodeID  string
	state   string // the daemon's state directory, absolute
	cfg     Config
	log     *slog.Logger
	runc    *runc
	uids    *uidTable
	devices *deviceRegistry
	// net sets up bridge-mode networks (nil: none here).
	net *network
	// rlimits are every container process's resource limits
	// (workloadRlimits), decided once at start.
	rlimits []specs.POSIXRlimit
	// unusable says why workloads cannot be isolated here (nil: they can).
	unusable error
	// workfs makes each allocation's /work a file system of its disk
	// allowance (workfs.go); nil where it cannot, and /work is only
	// measured. diskLimit names which (diskFilesystem, diskMeasured,
	// diskNone).
	workfs    *workFS
	diskLimit string
	// windowNow is the control plane's time as the daemon reckons it
	// (nil: the node's own clock), which keeper deadlines are reckoned
	// from.
	windowNow func() time.Time
	// bootNow stands in for the node's boot clock, which keeper deadlines
	// are written in (nil: CLOCK_BOOTTIME; keeper_deadline.go).
	bootNow func() time.Duration
	// keeperShell is the shell the keepers of the containers it starts
	// run under (keeper_program.go), decided once at start ("": keeperSh).
	keeperShell keeperShell
	// keeperPoll stands in for the keeper's poll in tests (0: keeperPoll,
	// or keeperBashPoll under bash).
	keeperPoll time.Duration
	// keeperMu orders the writes of keepers' deadline files (a container's
	// start, an extension, a resync), which share a temporary file name.
	keeperMu sync.Mutex

	mu sync.Mutex // orders the creation and removal of containers
	// overDisk are the allocations stopped for outgrowing their disk, with
	// the reason; they run nothing more until they are forgotten.
	overDisk map[string]string
}

// openSandbox prepares the workload root and, in container mode, finds
// out whether containers can run here: a daemon that cannot isolate keeps
// running (its node stays reachable, assignments are still journaled) but
// refuses every workload with the reason (see check).
func openSandbox(ctx context.Context, cfg Config, gpus []wire.InventoryGPU) (*sandbox, error) {
	state, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	s := &sandbox{mode: cfg.WorkloadIsolation, root: cfg.WorkloadDir, nodeID: cfg.NodeID, state: state, cfg: cfg,
		log: cfg.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.mode == "" {
		s.mode = IsolationContainer
	}
	if s.mode != IsolationContainer && s.mode != IsolationNone {
		return nil, fmt.Errorf("workload isolation must be %q or %q, not %q", IsolationContainer, IsolationNone, s.mode)
	}
	if s.root == "" {
		s.root = DefaultWorkloadDir
		if s.mode == IsolationNone {
			s.root = filepath.Join(state, "workloads")
		}
	}
	if s.root, err = filepath.Abs(s.root); err != nil {
		return nil, fmt.Errorf("workload dir: %w", err)
	}
	if s.mode == IsolationNone {
		s.openDiskLimit(ctx)
		return s, os.MkdirAll(s.root, 0o700)
	}
	s.unusable = s.prepare(ctx, gpus)
	s.openRlimits(currentDaemonLimits())
	s.openDiskLimit(ctx)
	return s, nil
}

// openDiskLimit decides how allocations' disks are limited here, and
// says so once: by a file system of each allocation's allowance where
// containers run and one can be made, otherwise only by the measurement.
func (s *sandbox) openDiskLimit(ctx context.Context) {
	if s.mode == IsolationNone {
		s.diskLimit = diskNone
		s.log.Info("disk limit: none, workloads are plain processes (--workload-isolation=none)", "diskLimit", s.diskLimit)
		return
	}
	s.diskLimit = diskMeasured
	why := errors.New("workloads are refused")
	if s.unusable == nil {
		s.workfs, why = openWorkFS(ctx, s.root)
	}
	if why == nil {
		s.diskLimit = diskFilesystem
		s.log.Info("disk limit: each allocation's /work is a file system of its disk", "diskLimit", s.diskLimit)
		return
	}
	s.log.Warn("disk limit: /work is only measured, every "+DefaultDiskCheckEvery.String()+" by default: an allocation "+
		"can overshoot its disk between two measurements", "diskLimit", s.diskLimit, "why", why.Error())
}

// prepare checks what container isolation needs and sets it up: root, a
// runc that runs, the cgroup controllers the limits use, a workload root
// no other user can tamper with, and the GPUs' CDI spec.
func (s *sandbox) prepare(ctx context.Context, gpus []wire.InventoryGPU) error {
	if os.Geteuid() != 0 {
		return errors.New("workload isolation needs the daemon to run as root (to run containers through runc); " +
			"run it as root, or pass --workload-isolation=none on a development machine")
	}
	bin := s.cfg.RuncPath
	if bin == "" {
		bin = "runc"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return fmt.Errorf("workload isolation needs runc (apt-get install runc): %w", err)
	}
	s.runc = &runc{bin: path, root: filepath.Join(s.state, "runc")}
	if _, err := s.runc.version(ctx); err != nil {
		return fmt.Errorf("runc does not run: %w", err)
	}
	if err := checkCgroupControllers(s.cfg.CgroupRoot); err != nil {
		return err
	}
	if err := secureDir(s.root); err != nil {
		return err
	}
	base, count := s.cfg.WorkloadUIDBase, s.cfg.WorkloadUIDCount
	if base == 0 {
		base = DefaultWorkloadUIDBase
	}
	if count == 0 {
		count = DefaultWorkloadUIDCount
	}
	table := s.cfg.UIDTable
	if table == "" {
		table = DefaultUIDTable
	}
	s.uids = &uidTable{path: table, base: base, count: count}
	dirs := s.cfg.CDISpecDirs
	if len(dirs) == 0 {
		dirs = DefaultCDISpecDirs
	}
	if strings.TrimSpace(s.cfg.FakeGPUs) != "" {
		dir, err := writeFakeGPUSpec(filepath.Join(s.state, "fake-gpus"), gpus)
		if err != nil {
			return err
		}
		dirs = []string{dir}
	}
	if s.devices, err = openDeviceRegistry(dirs, gpus); err != nil {
		return err
	}
	// Every GPU of the node must be in the CDI spec: one that is not
	// could never be given to a workload, and a node without a spec at
	// all must say so at once, not at its first booking.
	for _, g := range gpus {
		if _, err := s.devices.names(&wire.AssignPayload{Devices: []wire.AssignedDevice{{ID: g.UUID, GPU: g.UUID,
			Kind: "gpu", Visible: g.UUID}}}); err != nil {
			return err
		}
	}
	// Bridge networking is optional: without it, bridge-mode allocations'
	// workloads are refused, the others run.
	if n, err := newNetwork(s.cfg, s.state); err != nil {
		s.log.Warn("bridge networking unavailable", "err", err)
	} else {
		s.net = n
	}
	// The keeper's shell (keeper_program.go): without a bash that can,
	// a workload using every process its limit allows can end its own
	// container early.
	var why string
	if s.keeperShell, why = keeperShellHere(ctx); s.keeperShell == keeperBash {
		s.log.Info("keepers run under "+string(keeperBash)+", forking nothing", "keeperShell", s.keeperShell)
	} else {
		s.log.Warn("keepers run under "+string(keeperSh)+", which forks a sleep at every poll: a workload using "+
			"every process of its allocation's limit then ends its own container early", "keeperShell", s.keeperShell,
			"why", why)
	}
	return nil
}

// check says why workloads cannot run here, or nil.
func (s *sandbox) check() error { return s.unusable }

// domainOf is the security domain of an assignment (nil: the fleet's).
func domainOf(a *wire.AssignPayload) string {
	if a == nil {
		return fleetDomain
	}
	return a.AllocationID
}

// workload is a started-to-be workload process: cmd runs it (and waits
// for it); kill ends the workload itself at once, whatever it ignores;
// oomKilled says whether the allocation's OOM killer fired since it was
// made.
type workload struct {
	cmd       *exec.Cmd
	kill      func()
	oomKilled func() bool
	// pidFile and cgroup identify the workload's own process (container
	// mode), recorded so that a restarted daemon can still kill it.
	pidFile, cgroup string
	// exitFile is where its exit status is written when it exits
	// (container mode; adopted_exit.go).
	exitFile string
	// oomBefore is how many processes the allocation's OOM killer had
	// killed when it was made (container mode).
	oomBefore int64
	// group is the workload's own cgroup (container mode), which every
	// process it starts stays in.
	group workloadCgroup
	// cleanup removes what was made to start it, once it has exited
	// (nil: nothing).
	cleanup func()
}

// done cleans up after a workload that has exited.
func (w *workload) done() {
	if w.cleanup != nil {
		w.cleanup()
	}
}

// workload builds a workload of allocation a (nil: an operator's job):
// sh -c script, in <work>/<dir> (the allocation's work directory, /work
// in its container), with a clean environment. The workload
// sees only a's devices; CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES
// name them too (see visibleDevices), as a convenience only. ctx's end
// kills it.
func (s *sandbox) workload(ctx context.Context, a *wire.AssignPayload, script, dir string) (*workload, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("workloads are refused on this node: %w", err)
	}
	domain := domainOf(a)
	if !validDomain.MatchString(domain) {
		return nil, fmt.Errorf("allocation id %q cannot name a workload domain", domain)
	}
	visible := visibleDevices(a)
	env := []string{"PATH=" + workloadPath, "LANG=C.UTF-8", "COMPUTE_NODE_ID=" + s.nodeID,
		"COMPUTE_ALLOCATION_ID=" + strings.TrimPrefix(domain, fleetDomain),
		"CUDA_VISIBLE_DEVICES=" + visible, "NVIDIA_VISIBLE_DEVICES=" + visible}
	if s.mode == IsolationNone {
		work := filepath.Join(s.root, domain, "work")
		if usesMPS(a) {
			if err := os.MkdirAll(filepath.Join(work, "mps"), 0o700); err != nil {
				return nil, fmt.Errorf("MPS dir: %w", err)
			}
			env = append(env, "CUDA_MPS_PIPE_DIRECTORY="+work+"/mps", "CUDA_MPS_LOG_DIRECTORY="+work+"/mps")
		}
		return s.plainWorkload(ctx, filepath.Join(work, dir), script, env)
	}
	if why := s.diskExceeded(domain); why != "" {
		return nil, fmt.Errorf("%s", why)
	}
	uid, err := s.pod(ctx, a, domain)
	if err != nil {
		return nil, err
	}
	env = append(env, "HOME="+workDir, "TMPDIR=/tmp")
	if usesMPS(a) {
		env = append(env, "CUDA_MPS_PIPE_DIRECTORY="+workDir+"/mps", "CUDA_MPS_LOG_DIRECTORY="+workDir+"/mps")
	}
	return s.containerWorkload(ctx, domain, workloadProcess(uid, dir, script, env, s.rlimits))
}

// plainWorkload is a workload without isolation (IsolationNone): a
// process of the daemon's user, in a process group of its own, in wd.
func (s *sandbox) plainWorkload(ctx context.Context, wd, script string, env []string) (*workload, error) {
	if err := os.MkdirAll(wd, 0o700); err != nil {
		return nil, fmt.Errorf("workload dir: %w", err)
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Dir = wd
	cmd.Env = append(env, "HOME="+wd, "TMPDIR="+wd)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	kill := func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	cmd.Cancel = func() error { kill(); return nil }
	cmd.WaitDelay = workloadWaitDelay
	return &workload{cmd: cmd, kill: kill, oomKilled: func() bool { return false }}, nil
}

// visibleDevices is what CUDA_VISIBLE_DEVICES says of an assignment: its
// devices' Visible values in device order, each once (two slots of one GPU
// see that GPU once), comma-joined; "" (no GPU) for none.
func visibleDevices(a *wire.AssignPayload) string {
	if a == nil {
		return ""
	}
	var out []string
	for _, d := range a.Devices {
		if d.Visible != "" && !slices.Contains(out, d.Visible) {
			out = append(out, d.Visible)
		}
	}
	return strings.Join(out, ",")
}

// usesMPS reports whether an assignment holds an MPS slot.
func usesMPS(a *wire.AssignPayload) bool {
	if a == nil {
		return false
	}
	for _, d := range a.Devices {
		if d.Kind == "slot" && d.Mode == "mps" {
			return true
		}
	}
	return false
}
