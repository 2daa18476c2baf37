package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/bettercompute/compute/wire"
)

// An allocation's container on the node: made at its first workload
// (pod), each workload a runc exec into it (containerWorkload), stopped
// whole (stop), and forgotten with its directory and user id at the
// unassign (forget).

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
	// Whose it is and until when, for a successor that lost the journal
	// (orphans.go).
	if err := s.recordAllocation(a); err != nil {
		return 0, fmt.Errorf("allocation record: %w", err)
	}
	if err := podRootFS(filepath.Join(dir, "rootfs")); err != nil {
		return 0, fmt.Errorf("allocation root: %w", err)
	}
	work := filepath.Join(dir, "work")
	if err := mkdirNoFollow(work, 0o700, int(uid)); err != nil {
		return 0, fmt.Errorf("allocation work dir: %w", err)
	}
	if s.workfs != nil && a != nil {
		switch err := s.workfs.ensure(ctx, dir, work, diskAllowance(*a), int(uid)); {
		case errors.Is(err, errPlainWork):
			s.log.Warn("allocation's /work is only measured", "allocation", domain, "why", err.Error())
		case err != nil:
			return 0, fmt.Errorf("allocation work dir: %w", err)
		}
	}
	if usesMPS(a) {
		if err := mkdirNoFollow(filepath.Join(work, "mps"), 0o700, int(uid)); err != nil {
			return 0, fmt.Errorf("MPS dir: %w", err)
		}
	}
	// The kernel's backstop for the window's end (keeper_deadline.go).
	if err := s.writeKeeperDeadline(a, domain); err != nil {
		return 0, fmt.Errorf("allocation keeper deadline: %w", err)
	}
	spec := podSpec(podParams{RootFS: filepath.Join(dir, "rootfs"), Work: work, UID: uid, Hostname: domain,
		CgroupsPath: s.cgroupsPath(domain), Limits: s.limitsOf(a), KeeperDir: s.keeperHostDir(domain),
		Keeper: s.keeperArgsOf(), Rlimits: s.rlimits})
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
	if err := writeFileDurable(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
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
func (s *sandbox) containerWorkload(ctx context.Context, domain string, proc specs.Process) (*workload, error) {
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
	base := strings.TrimSuffix(f.Name(), ".json")
	pidFile, exitFile := base+".pid", base+".exit"
	cgroup := s.cgroupsPath(domain)
	// The temporary file's name is unique only while it exists; an exec
	// job's cgroup outlives it while the job's background processes run.
	group, err := newWorkloadCgroup(s.cfg.CgroupRoot, cgroup,
		filepath.Base(base)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err != nil {
		_ = os.Remove(f.Name())
		return nil, err
	}
	cmd := s.runc.exec(ctx, domain, f.Name(), pidFile, group.execFlag())
	// Its exit status outlives a daemon that is killed meanwhile, for the
	// successor that adopts it (adopted_exit.go).
	recordExit(cmd, exitFile)
	// Its own process group: the workload outlives a daemon that is
	// killed, as it does a lost connection; the successor adopts it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	kill := func() { killWorkload(group, pidFile, cgroup) }
	cmd.Cancel = func() error {
		kill()
		return nil
	}
	cmd.WaitDelay = workloadWaitDelay
	before := oomKills(s.cfg.CgroupRoot, cgroup)
	return &workload{cmd: cmd, kill: kill, pidFile: pidFile, cgroup: cgroup, group: group,
		exitFile: exitFile, oomBefore: before,
		cleanup: func() {
			_ = os.Remove(f.Name())
			_ = os.Remove(pidFile)
			_ = os.Remove(exitFile)
			// Deleted when nothing of the workload is left; what it left
			// running keeps it until the workload's end (instances) or the
			// container's.
			_ = unix.Rmdir(group.dir())
		},
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
	if err := s.net.teardown(ctx, s.nodeID, domain); err != nil {
		return fmt.Errorf("network of %s: %w", domain, err)
	}
	if cgroupHasProcesses(s.cfg.CgroupRoot, s.cgroupsPath(domain)) {
		// Processes runc did not know of: a container whose runc state
		// went with a state directory that was wiped while it ran. The
		// allocation's cgroup is the daemon's all the same, and whatever
		// is in it is the allocation's: it goes with the allocation.
		s.log.Warn("killing processes left in the cgroup of an allocation", "allocation", domain)
		if err := killCgroupTree(s.cfg.CgroupRoot, s.cgroupsPath(domain)); err != nil {
			return fmt.Errorf("the cgroup of %s still has processes after its container was deleted: %w", domain, err)
		}
	}
	// runc deleted the cgroup with the container; one it did not know of
	// keeps its cgroup, empty, in every hierarchy, unless it goes here.
	if err := removeCgroupTree(s.cfg.CgroupRoot, s.cgroupsPath(domain)); err != nil {
		return fmt.Errorf("the cgroup of %s: %w", domain, err)
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
// work directory's file system, then its directory (the image with it),
// then its user id. An error leaves the rest in place, so that
// the unassign is not acknowledged while anything of it may remain.
func (s *sandbox) forget(ctx context.Context, allocationID string) error {
	if allocationID == "" || allocationID == fleetDomain || !validDomain.MatchString(allocationID) {
		return nil
	}
	if err := s.stop(ctx, allocationID); err != nil {
		return err
	}
	// Whatever this daemon's disk limit: a predecessor's may have mounted
	// the work directory. Its container is gone, so nothing holds it.
	if err := releaseWork(ctx, s.domainDir(allocationID), s.workDir(allocationID)); err != nil {
		return fmt.Errorf("release the work directory of %s: %w", allocationID, err)
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
	// An allocation whose cgroup still holds processes has a container
	// here too, even one runc no longer knows (its state directory was
	// wiped while it ran), so that the watchdog stops it — if it is this
	// daemon's: its directory is in this daemon's workload root (made
	// before its container, removed after it). The cgroup's name alone
	// says nothing of whose it is: another daemon on the machine with the
	// same node id (a second fleet's, a demo's) has its allocations'
	// cgroups under the same /compute/<node>, and they are not this one's
	// to kill.
	for _, id := range allocationCgroups(s.cfg.CgroupRoot, "/compute/"+s.nodeID) {
		if slices.Contains(ids, id) || !cgroupHasProcesses(s.cfg.CgroupRoot, s.cgroupsPath(id)) {
			continue
		}
		if fi, err := os.Lstat(s.domainDir(id)); err == nil && fi.IsDir() {
			ids = append(ids, id)
		}
	}
	return ids
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
