package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultCgroupRoot is where the cgroup hierarchies are mounted.
const DefaultCgroupRoot = "/sys/fs/cgroup"

// runc makes each allocation's cgroup from its container's spec (on
// cgroup v1 and v2 alike) and deletes it with the container. The daemon
// reads them — whether the controllers the limits need are there, whether
// an allocation's OOM killer fired, whether anything is left in a cgroup —
// and writes only the cgroup of each workload below its container's
// (workload_cgroup.go), which holds no limit.

// limitControllers are the controllers an allocation's limits and device
// allow-list need, then (on v1 only) the freezer, which ends a workload's
// processes all at once (workloadCgroup).
var limitControllers = []string{"cpu", "memory", "pids", "devices", "freezer"}

// cgroupV2 reports whether root is a cgroup v2 (unified) mount.
func cgroupV2(root string) bool {
	var st unix.Statfs_t
	return unix.Statfs(root, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}

// checkCgroupControllers says which controller the limits need is
// missing, or nil. On v2 the device allow-list is a BPF program, not a
// controller.
func checkCgroupControllers(root string) error {
	if root == "" {
		root = DefaultCgroupRoot
	}
	if cgroupV2(root) {
		b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
		if err != nil {
			return fmt.Errorf("cgroup v2 at %s: %w", root, err)
		}
		have := strings.Fields(string(b))
		for _, c := range limitControllers[:3] {
			if !contains(have, c) {
				return fmt.Errorf("cgroup v2 at %s lacks the %s controller: workloads' limits cannot be enforced", root, c)
			}
		}
		return nil
	}
	for _, c := range limitControllers {
		if _, err := os.Stat(filepath.Join(root, c, "cgroup.procs")); err != nil {
			return fmt.Errorf("cgroup v1 controller %s is not mounted at %s: workloads' limits cannot be enforced", c,
				filepath.Join(root, c))
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// oomKills is how many processes the OOM killer has killed in the cgroup
// at path (relative to the hierarchies): memory.oom_control's oom_kill on
// v1, memory.events' on v2; 0 when unknown.
func oomKills(root, path string) int64 {
	if root == "" {
		root = DefaultCgroupRoot
	}
	file := filepath.Join(root, "memory", path, "memory.oom_control")
	if cgroupV2(root) {
		file = filepath.Join(root, path, "memory.events")
	}
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "oom_kill "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// cgroupProcsFile is the process list of the cgroup at path: the pids
// controller's on v1 (every container is in it), the unified one on v2.
func cgroupProcsFile(root, path string) string {
	if root == "" {
		root = DefaultCgroupRoot
	}
	if cgroupV2(root) {
		return filepath.Join(root, path, "cgroup.procs")
	}
	return filepath.Join(root, "pids", path, "cgroup.procs")
}

// cgroupTreePIDs are the processes in the cgroup at path and every cgroup
// below it (the workloads' own: workloadCgroup), as the pids hierarchy
// (v1) or the unified one (v2) lists them.
func cgroupTreePIDs(root, path string) []int {
	dir := filepath.Dir(cgroupProcsFile(root, path))
	var pids []int
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		in, _ := readProcs(p)
		pids = append(pids, in...)
		return nil
	})
	return pids
}

// readProcs reads the pids a cgroup.procs file lists.
func readProcs(file string) ([]int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// cgroupHasProcesses reports whether any process is left in the cgroup.
func cgroupHasProcesses(root, path string) bool {
	b, err := os.ReadFile(cgroupProcsFile(root, path))
	return err == nil && len(strings.TrimSpace(string(b))) > 0
}

// allocationCgroups are the names of the cgroups below parent (a node's,
// /compute/<node>) that could be an allocation's, as the pids hierarchy
// (v1) or the unified one (v2) lists them.
func allocationCgroups(root, parent string) []string {
	entries, err := os.ReadDir(filepath.Dir(cgroupProcsFile(root, parent)))
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && validDomain.MatchString(e.Name()) && e.Name() != fleetDomain {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

// killCgroupTree ends, with SIGKILL, every process in the cgroup at path
// and in the cgroups below it, and returns once none is left (or an error
// after workloadCgroupSettle). On v1 the cgroup is frozen first (the
// freezer hierarchy, where runc put the container and the daemon its
// workloads), so that nothing forks past the kill; on v2 cgroup.kill does
// it in the kernel. Only the pids the cgroup's own cgroup.procs files list
// are signalled.
func killCgroupTree(root, path string) error {
	if root == "" {
		root = DefaultCgroupRoot
	}
	v2 := cgroupV2(root)
	state := filepath.Join(root, "freezer", path, "freezer.state")
	frozen := false
	if v2 {
		_ = os.WriteFile(filepath.Join(root, path, "cgroup.kill"), []byte("1"), 0)
	} else if os.WriteFile(state, []byte("FROZEN"), 0) == nil {
		frozen = true
		deadline := time.Now().Add(workloadCgroupSettle)
		for {
			b, err := os.ReadFile(state)
			if err != nil || strings.TrimSpace(string(b)) == "FROZEN" || time.Now().After(deadline) {
				break
			}
			time.Sleep(workloadCgroupPoll)
		}
	}
	for _, pid := range cgroupTreePIDs(root, path) {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	if frozen {
		if err := os.WriteFile(state, []byte("THAWED"), 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("thaw the cgroup %s: %w", path, err)
		}
	}
	deadline := time.Now().Add(workloadCgroupSettle)
	for {
		pids := cgroupTreePIDs(root, path)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cgroup %s still has %d processes after they were killed", path, len(pids))
		}
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		time.Sleep(workloadCgroupPoll)
	}
}

// killWorkload kills every process of a workload in container mode: its
// cgroup's, or, should that fail, its own process (killContainerProcess).
func killWorkload(group workloadCgroup, pidFile, cgroup string) {
	if group.kill() != nil || group.path == "" {
		killContainerProcess(pidFile, cgroup)
	}
}

// killContainerProcess kills, with SIGKILL, the process whose host pid
// runc wrote to pidFile — only if it is still in the container's cgroup,
// so that a pid reused by another process (another tenant's) is never
// signalled.
func killContainerProcess(pidFile, cgroup string) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return
	}
	if !inCgroup(pid, cgroup) {
		return
	}
	_ = unix.Kill(pid, unix.SIGKILL)
}

// inCgroup reports whether process pid is in the cgroup at path (in any
// hierarchy).
func inCgroup(pid int, path string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && (parts[2] == path || strings.HasPrefix(parts[2], path+"/")) {
			return true
		}
	}
	return false
}

// ProtectFromOOMKiller lowers the process's OOM score, so that a machine
// short of memory kills workloads before the daemon that stops them and
// keeps the journal (workloads are limited by their cgroups first). The
// `compute agent` command calls it; a daemon run inside another process
// (the demo's, in `compute serve`) leaves that process's score alone.
func ProtectFromOOMKiller(log interface{ Warn(string, ...any) }) {
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte("-900"), 0o644); err != nil {
		log.Warn("could not lower the daemon's OOM score", "err", err)
	}
}

// removeCgroupTree deletes the cgroup at path and every cgroup below it,
// deepest first, in every hierarchy (the one unified hierarchy on v2).
// runc deletes a container's cgroup with the container; this is for one
// runc no longer knows (its state went with a wiped state directory),
// whose cgroup would otherwise stay behind, empty, in each hierarchy, for
// as long as the machine runs. The kernel refuses to delete a cgroup that
// still has a process, so nothing running loses its cgroup: that is the
// error. A cgroup that does not exist is removed already.
func removeCgroupTree(root, path string) error {
	if root == "" {
		root = DefaultCgroupRoot
	}
	tops := []string{root}
	if !cgroupV2(root) {
		entries, err := os.ReadDir(root)
		if err != nil {
			return fmt.Errorf("cgroup hierarchies at %s: %w", root, err)
		}
		tops = nil
		for _, e := range entries {
			if e.IsDir() { // cpu and cpuacct are often links to cpu,cpuacct
				tops = append(tops, filepath.Join(root, e.Name()))
			}
		}
	}
	var errs []error
	for _, top := range tops {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(top, path), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := unix.Rmdir(dirs[i]); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("remove the cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}
