package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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
	// IsolationUser runs each allocation's workloads under a user id of
	// their own, in a directory only that user can enter. It needs the
	// daemon to run as root.
	IsolationUser = "user"
	// IsolationNone runs workloads as the daemon's own user: for a
	// development machine only, where no tenant is hostile.
	IsolationNone = "none"
)

// Defaults of the workload user range: far above the ids a distribution
// gives to people and services, and below the 32-bit overflow ids.
const (
	DefaultWorkloadUIDBase  = 200_000
	DefaultWorkloadUIDCount = 65_536
)

// workloadWaitDelay bounds how long a finished or killed workload may keep
// its output pipes open through a leftover child before they are closed.
const workloadWaitDelay = 5 * time.Second

// fleetDomain is the security domain of an operator's node job that names
// no allocation: it gets the first id of the range, never a tenant's.
const fleetDomain = "fleet"

// validDomain is what an allocation id must look like to name a directory.
var validDomain = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// sandbox keeps tenants' workloads out of the daemon's security domain.
//
// A workload (an exec node job or an instance) runs as the user id of its
// allocation, in <root>/<allocation>, owned by that user and mode 0700,
// with a clean environment and in a process group of its own. The daemon's
// state directory (credential, journal) stays root's and 0700, so no
// workload can read it; /proc/<daemon>/environ and the daemon's memory are
// closed to other users by the kernel; and the daemon's command line holds
// no secret (the join token comes from a file). Two allocations never share
// a user id: ids are handed out from a range and recorded in the state
// directory, so a restarted daemon gives an allocation the same id.
type sandbox struct {
	mode   string
	root   string
	base   uint32
	count  uint32
	nodeID string

	// cgroups applies allocations' CPU and memory limits (nil: none).
	cgroups *cgroups

	mu   sync.Mutex
	path string            // the id table, in the state directory
	uids map[string]uint32 // security domain → user id
}

// openSandbox prepares the workload root and loads the id table.
func openSandbox(cfg Config) (*sandbox, error) {
	s := &sandbox{mode: cfg.WorkloadIsolation, root: cfg.WorkloadDir, base: cfg.WorkloadUIDBase,
		count: cfg.WorkloadUIDCount, nodeID: cfg.NodeID, path: filepath.Join(cfg.StateDir, "workload-uids.json"),
		uids: map[string]uint32{}, cgroups: newCgroups(cfg.CgroupRoot, cfg.Logger)}
	if s.mode == "" {
		s.mode = IsolationUser
	}
	if s.mode != IsolationUser && s.mode != IsolationNone {
		return nil, fmt.Errorf("workload isolation must be %q or %q, not %q", IsolationUser, IsolationNone, s.mode)
	}
	if s.base == 0 {
		s.base = DefaultWorkloadUIDBase
	}
	if s.count < 2 {
		s.count = DefaultWorkloadUIDCount
	}
	if s.root == "" {
		s.root = defaultWorkloadDir(cfg.StateDir)
	}
	root, err := filepath.Abs(s.root)
	if err != nil {
		return nil, fmt.Errorf("workload dir: %w", err)
	}
	s.root = root
	if err := os.MkdirAll(s.root, 0o711); err != nil {
		return nil, fmt.Errorf("workload dir: %w", err)
	}
	if err := os.Chmod(s.root, 0o711); err != nil {
		return nil, fmt.Errorf("workload dir: %w", err)
	}
	b, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("workload ids: %w", err)
	default:
		if err := json.Unmarshal(b, &s.uids); err != nil {
			return nil, fmt.Errorf("workload ids in %s: %w", s.path, err)
		}
	}
	return s, nil
}

// defaultWorkloadDir is a directory every user can traverse (the system
// temporary directory), keyed by the state directory so that two daemons
// on one machine never share it.
func defaultWorkloadDir(stateDir string) string {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		abs = stateDir
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(os.TempDir(), "compute-workloads", hex.EncodeToString(sum[:6]))
}

// check says why workloads cannot run here, or nil: user isolation needs
// root (to switch users) and a workload root every user can reach.
func (s *sandbox) check() error {
	if s.mode == IsolationNone {
		return nil
	}
	if os.Geteuid() != 0 {
		return errors.New("workload isolation needs the daemon to run as root, to start each allocation's " +
			"workloads under a user of their own; run it as root, or pass --workload-isolation=none on a " +
			"development machine")
	}
	for dir := s.root; ; dir = filepath.Dir(dir) {
		st, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("workload dir: %w", err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("workload dir %s cannot be reached by workload users: %s is not traversable by others "+
				"(choose another --workload-dir)", s.root, dir)
		}
		if dir == filepath.Dir(dir) {
			return nil
		}
	}
}

// uid returns the user id of a security domain, handing out the lowest
// free one of the range to a new domain and recording it before use.
func (s *sandbox) uid(domain string) (uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.uids[domain]; ok {
		return id, nil
	}
	used := make(map[uint32]bool, len(s.uids))
	for _, id := range s.uids {
		used[id] = true
	}
	next := s.base + 1 // s.base is the fleet domain's
	if domain == fleetDomain {
		next = s.base
	}
	for used[next] {
		next++
		if next >= s.base+s.count {
			return 0, fmt.Errorf("no free workload user id in [%d, %d)", s.base, s.base+s.count)
		}
	}
	s.uids[domain] = next
	b, err := json.Marshal(s.uids)
	if err == nil {
		err = writeFileAtomic(s.path, b, 0o600)
	}
	if err != nil {
		delete(s.uids, domain)
		return 0, fmt.Errorf("record workload user id: %w", err)
	}
	return next, nil
}

// forget releases an allocation once nothing of it runs any more (its
// assignment ended): its directory and cgroup go, and its user id returns
// to the range, so that the range does not run out.
func (s *sandbox) forget(allocationID string) error {
	if allocationID == "" || allocationID == fleetDomain || !validDomain.MatchString(allocationID) {
		return nil
	}
	if s.cgroups != nil {
		s.cgroups.remove(allocationID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.RemoveAll(filepath.Join(s.root, allocationID)); err != nil {
		return err
	}
	if _, ok := s.uids[allocationID]; !ok {
		return nil
	}
	delete(s.uids, allocationID)
	b, err := json.Marshal(s.uids)
	if err != nil {
		return err
	}
	return writeFileAtomic(s.path, b, 0o600)
}

// command builds the process of a workload: sh -c script as the
// allocation's user, in <root>/<allocation>/<sub...>, with a clean
// environment, in its own process group, which ctx's end kills whole, and
// in the allocation's cgroup when limits are usable (see cgroups).
//
// a is the allocation's assignment, or nil for an operator's job that
// names no allocation. The workload sees only a's devices:
// CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES are their Visible values
// (see visibleDevices), empty for none; an MPS slot also gets its
// allocation's MPS pipe and log directories.
func (s *sandbox) command(ctx context.Context, a *wire.AssignPayload, script string, sub ...string) (*exec.Cmd, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var allocationID string
	if a != nil {
		allocationID = a.AllocationID
	}
	domain := allocationID
	if domain == "" {
		domain = fleetDomain
	}
	if !validDomain.MatchString(domain) {
		return nil, fmt.Errorf("allocation id %q cannot name a workload directory", allocationID)
	}
	dir := filepath.Join(append([]string{s.root, domain}, sub...)...)
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Dir = dir
	visible := visibleDevices(a)
	cmd.Env = []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8",
		"COMPUTE_NODE_ID=" + s.nodeID, "COMPUTE_ALLOCATION_ID=" + allocationID,
		"CUDA_VISIBLE_DEVICES=" + visible, "NVIDIA_VISIBLE_DEVICES=" + visible,
	}
	attr := &syscall.SysProcAttr{Setpgid: true}
	uid := -1
	if s.mode == IsolationUser {
		id, err := s.uid(domain)
		if err != nil {
			return nil, err
		}
		uid = int(id)
		attr.Credential = &syscall.Credential{Uid: id, Gid: id, Groups: []uint32{}}
	}
	if err := mkdirOwned(s.root, append([]string{domain}, sub...), uid); err != nil {
		return nil, fmt.Errorf("workload dir: %w", err)
	}
	if usesMPS(a) {
		mps := filepath.Join(s.root, domain, "mps")
		if err := mkdirOwned(s.root, []string{domain, "mps"}, uid); err != nil {
			return nil, fmt.Errorf("MPS dir: %w", err)
		}
		cmd.Env = append(cmd.Env, "CUDA_MPS_PIPE_DIRECTORY="+mps, "CUDA_MPS_LOG_DIRECTORY="+mps)
	}
	if a != nil && s.cgroups != nil {
		fd, err := s.cgroups.fd(allocationID, a.VCPU, a.MemoryMB)
		if err != nil {
			return nil, err
		}
		if fd >= 0 {
			setCgroupFD(attr, fd)
		}
	}
	cmd.SysProcAttr = attr
	// The whole process group goes, not only sh: a workload's children
	// must not outlive it.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = workloadWaitDelay
	return cmd, nil
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

// mkdirOwned creates root/parts... one level at a time, each owned by uid
// (when not -1) and mode 0700, so that only the workload's user enters.
func mkdirOwned(root string, parts []string, uid int) error {
	dir := root
	for _, p := range parts {
		dir = filepath.Join(dir, p)
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if uid >= 0 {
			if err := os.Lchown(dir, uid, uid); err != nil {
				return err
			}
		}
	}
	return nil
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
