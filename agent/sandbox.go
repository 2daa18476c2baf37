package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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
// empty root and its work directory (the allocation user's); its
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
	// unusable says why workloads cannot be isolated here (nil: they can).
	unusable error

	mu   sync.Mutex // orders the creation and removal of containers
	pods map[string]uint32
	// overDisk are the allocations stopped for outgrowing their disk, with
	// the reason; they run nothing more until they are forgotten.
	overDisk map[string]string
}

// workDir is the allocation's work directory on the node (/work inside).
func (s *sandbox) workDir(domain string) string { return filepath.Join(s.domainDir(domain), "work") }

// diskExceeded says why the allocation's workloads are refused for its
// disk, or "".
func (s *sandbox) diskExceeded(domain string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overDisk[domain]
}

func (s *sandbox) markDiskExceeded(domain, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.overDisk == nil {
		s.overDisk = map[string]string{}
	}
	s.overDisk[domain] = why
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
		log: cfg.Logger, pods: map[string]uint32{}}
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
		return s, os.MkdirAll(s.root, 0o700)
	}
	s.unusable = s.prepare(ctx, gpus)
	return s, nil
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
	return nil
}

// secureDir makes dir (and its parents) if missing and checks that no
// user but root can write into it or any directory above it: a workload
// root a local user could replace or pre-create would let them redirect
// the root daemon's writes.
func secureDir(dir string) error {
	// Made if missing; an existing directory is only checked, never
	// changed (it may be anything, /tmp included).
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("workload dir: %w", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Lstat(d)
		if err != nil {
			return fmt.Errorf("workload dir: %w", err)
		}
		sys, _ := st.Sys().(*syscall.Stat_t)
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("workload dir %s: %s is a symbolic link", dir, d)
		case sys != nil && sys.Uid != 0:
			return fmt.Errorf("workload dir %s: %s belongs to user %d, not root", dir, d, sys.Uid)
		case st.Mode().Perm()&0o022 != 0 && st.Mode()&fs.ModeSticky == 0:
			return fmt.Errorf("workload dir %s: %s can be written by other users", dir, d)
		case st.Mode()&fs.ModeSticky != 0 && d == dir:
			return fmt.Errorf("workload dir %s is a shared sticky directory", dir)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
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
	return s.containerWorkload(ctx, domain, uid, workloadProcess(uid, dir, script, env))
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

// domainDir is the allocation's directory on the node.
func (s *sandbox) domainDir(domain string) string { return filepath.Join(s.root, domain) }

// cgroupsPath is the allocation's cgroup, relative to each hierarchy.
func (s *sandbox) cgroupsPath(domain string) string {
	return "/compute/" + s.nodeID + "/" + domain
}

// pod makes sure the allocation's container runs, and returns its user.
func (s *sandbox) pod(ctx context.Context, a *wire.AssignPayload, domain string) (uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	uid, err := s.uids.get(uidOwner(s.state, domain))
	if err != nil {
		return 0, err
	}
	st, err := s.runc.state(ctx, domain)
	if err != nil {
		return 0, err
	}
	if st.Status == "running" {
		s.pods[domain] = uid
		return uid, nil
	}
	if st.Status != "" {
		if err := s.runc.remove(ctx, domain); err != nil {
			return 0, err
		}
	}
	dir := s.domainDir(domain)
	// The daemon makes only root's directories and the work directory's
	// own entry, each in a directory only root can write: nothing here
	// follows a link a tenant made.
	if err := mkdirNoFollow(dir, 0o700, 0); err != nil {
		return 0, fmt.Errorf("allocation dir: %w", err)
	}
	if err := podRootFS(filepath.Join(dir, "rootfs")); err != nil {
		return 0, fmt.Errorf("allocation root: %w", err)
	}
	work := filepath.Join(dir, "work")
	if err := mkdirNoFollow(work, 0o700, int(uid)); err != nil {
		return 0, fmt.Errorf("allocation work dir: %w", err)
	}
	if usesMPS(a) {
		if err := mkdirNoFollow(filepath.Join(work, "mps"), 0o700, int(uid)); err != nil {
			return 0, fmt.Errorf("MPS dir: %w", err)
		}
	}
	spec := podSpec(podParams{RootFS: filepath.Join(dir, "rootfs"), Work: work, UID: uid, Hostname: domain,
		CgroupsPath: s.cgroupsPath(domain), Limits: s.limitsOf(a)})
	if err := s.devices.inject(spec, a); err != nil {
		return 0, fmt.Errorf("GPUs of allocation %s: %w", domain, err)
	}
	mode := ""
	if a != nil {
		mode = a.Network
	}
	if err := s.net.configure(ctx, spec, s.nodeID, domain, mode); err != nil {
		return 0, fmt.Errorf("network of allocation %s: %w", domain, err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return 0, err
	}
	if err := writeFileAtomic(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(s.runc.root, 0o700); err != nil {
		return 0, err
	}
	if err := s.runc.start(ctx, domain, dir); err != nil {
		_ = s.runc.remove(context.WithoutCancel(ctx), domain)
		_ = s.net.teardown(context.WithoutCancel(ctx), s.nodeID, domain)
		return 0, err
	}
	s.pods[domain] = uid
	return uid, nil
}

// limitsOf are an allocation's limits: its vCPU and memory; processes
// per vCPU; /tmp and /dev/shm sized from its memory (their pages are
// charged to it anyway).
func (s *sandbox) limitsOf(a *wire.AssignPayload) limits {
	perVCPU := s.cfg.PidsPerVCPU
	if perVCPU <= 0 {
		perVCPU = DefaultPidsPerVCPU
	}
	l := limits{Pids: 4 * minPids, TmpMB: 1024, ShmMB: 64}
	if a == nil {
		return l
	}
	l.VCPU, l.MemoryMB = a.VCPU, a.MemoryMB
	l.Pids = max(minPids, perVCPU*a.VCPU)
	if a.MemoryMB > 0 {
		l.TmpMB = max(16, a.MemoryMB/2)
		l.ShmMB = max(16, a.MemoryMB/4)
	}
	return l
}

// containerWorkload is a `runc exec` of proc into the allocation's
// container.
func (s *sandbox) containerWorkload(ctx context.Context, domain string, uid uint32, proc interface{}) (*workload, error) {
	dir := s.domainDir(domain)
	f, err := os.CreateTemp(dir, "process-*.json")
	if err != nil {
		return nil, err
	}
	if err := json.NewEncoder(f).Encode(proc); err != nil {
		f.Close()
		return nil, err
	}
	f.Close()
	pidFile := strings.TrimSuffix(f.Name(), ".json") + ".pid"
	cgroup := s.cgroupsPath(domain)
	cmd := s.runc.exec(ctx, domain, f.Name(), pidFile)
	// Its own process group: the workload outlives a daemon that is
	// killed, as it does a lost connection; the successor adopts it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	kill := func() { killContainerProcess(pidFile, cgroup) }
	cmd.Cancel = func() error {
		kill()
		return nil
	}
	cmd.WaitDelay = workloadWaitDelay
	before := oomKills(s.cfg.CgroupRoot, cgroup)
	return &workload{cmd: cmd, kill: kill, pidFile: pidFile, cgroup: cgroup,
		oomKilled: func() bool { return oomKills(s.cfg.CgroupRoot, cgroup) > before }}, nil
}

// stop ends every process of the allocation's container and deletes it:
// its cgroup goes, and with its namespaces its /tmp and /dev/shm. Its
// directory and user id stay until forget.
func (s *sandbox) stop(ctx context.Context, domain string) error {
	if s.mode == IsolationNone || s.runc == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.runc.remove(ctx, domain); err != nil {
		return fmt.Errorf("stop the container of %s: %w", domain, err)
	}
	delete(s.pods, domain)
	if err := s.net.teardown(ctx, s.nodeID, domain); err != nil {
		return fmt.Errorf("network of %s: %w", domain, err)
	}
	if cgroupHasProcesses(s.cfg.CgroupRoot, s.cgroupsPath(domain)) {
		return fmt.Errorf("the cgroup of %s still has processes after its container was deleted", domain)
	}
	return nil
}

// terminate sends SIGTERM to every process of the allocation's container
// (the keeper ignores it), the start of a graceful stop.
func (s *sandbox) terminate(ctx context.Context, domain string) {
	if s.mode == IsolationNone || s.runc == nil {
		return
	}
	if st, err := s.runc.state(ctx, domain); err == nil && st.Status == "running" {
		_ = s.runc.killAll(ctx, domain, "TERM")
	}
}

// forget releases an allocation once it is unassigned: its container
// (every process of it, double-forked and setsid ones included), then its
// directory, then its user id. An error leaves the rest in place, so that
// the unassign is not acknowledged while anything of it may remain.
func (s *sandbox) forget(ctx context.Context, allocationID string) error {
	if allocationID == "" || allocationID == fleetDomain || !validDomain.MatchString(allocationID) {
		return nil
	}
	if err := s.stop(ctx, allocationID); err != nil {
		return err
	}
	// RemoveAll removes symbolic links, it does not follow them.
	if err := os.RemoveAll(s.domainDir(allocationID)); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.overDisk, allocationID)
	s.mu.Unlock()
	if s.uids == nil {
		return nil
	}
	// The container's processes were killed; the kernel may take a moment
	// to finish them. Until then the id stays taken (and the unassign is
	// not acknowledged).
	deadline := time.Now().Add(releaseWait)
	for {
		err := s.uids.release(uidOwner(s.state, allocationID))
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// releaseWait bounds how long forget waits for a deleted container's
// killed processes to be gone before it gives up (and the unassign fails,
// to be retried).
const releaseWait = 10 * time.Second

// containers lists the allocations that have a container here.
func (s *sandbox) containers(ctx context.Context) []string {
	if s.runc == nil {
		return nil
	}
	ids, err := s.runc.list(ctx)
	if err != nil {
		s.log.Warn("list containers", "err", err)
	}
	return ids
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

// writeFileAtomic replaces path with b through a rename, so a crash leaves
// the old or the new content, never half of one.
func writeFileAtomic(path string, b []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
