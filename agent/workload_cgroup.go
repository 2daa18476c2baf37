package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A workload's own cgroup. Every workload of an allocation runs in the
// allocation's one container, whose cgroup holds the limits; a workload's
// processes also go into a cgroup of their own below it, made by the
// daemon and named to runc (`runc exec --cgroup`). Its processes cannot
// leave it — not by forking twice, not by setsid, not by a new process
// group — so that stopping an instance ends every process it started,
// and an instance that exits leaves nothing running, without touching the
// allocation's other workloads. On cgroup v1 it is a freezer cgroup (the
// freezer is what lets the daemon kill a set of processes that forks
// while it is killed); on v2 a cgroup of the unified tree, ended with
// cgroup.kill.

// workloadCgroupSettle bounds how long killing a workload's cgroup waits
// for the kernel: the freezer to freeze it, the killed processes to leave.
const workloadCgroupSettle = 5 * time.Second

// workloadCgroupPoll is how often that wait looks again.
const workloadCgroupPoll = 5 * time.Millisecond

// workloadCgroup is the cgroup of one workload: path is its place in the
// hierarchy (the container's cgroup path, then the workload's name), root
// where the hierarchies are mounted.
type workloadCgroup struct {
	root, path string
	v2         bool
}

// newWorkloadCgroup makes the cgroup of a workload named name below the
// container cgroup at container (which runc made).
func newWorkloadCgroup(root, container, name string) (workloadCgroup, error) {
	if root == "" {
		root = DefaultCgroupRoot
	}
	c := workloadCgroup{root: root, path: container + "/" + name, v2: cgroupV2(root)}
	if err := os.Mkdir(c.dir(), 0o755); err != nil {
		return workloadCgroup{}, fmt.Errorf("the cgroup of workload %s: %w", name, err)
	}
	return c, nil
}

// dir is the cgroup's directory.
func (c workloadCgroup) dir() string {
	if c.v2 {
		return filepath.Join(c.root, c.path)
	}
	return filepath.Join(c.root, "freezer", c.path)
}

// execFlag is the value of `runc exec --cgroup` that starts the workload
// in this cgroup: the freezer controller's sub-cgroup on v1 (the other
// controllers stay the container's), the sub-cgroup on v2.
func (c workloadCgroup) execFlag() string {
	name := filepath.Base(c.path)
	if c.v2 {
		return name
	}
	return "freezer:" + name
}

// pids are the processes in the cgroup; none when it does not exist (or
// is the zero workloadCgroup: a workload without a container).
func (c workloadCgroup) pids() ([]int, error) {
	if c.path == "" {
		return nil, nil
	}
	pids, err := readProcs(filepath.Join(c.dir(), "cgroup.procs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return pids, err
}

// kill ends every process in the cgroup with SIGKILL and returns once
// none is left. On v1 the cgroup is frozen first, so that no process
// forks past the kill, and thawed after, so that the frozen processes
// take their SIGKILL; on v2 cgroup.kill does all of it in the kernel.
// Only processes in the cgroup are signalled: a pid is read from its
// cgroup.procs, which never names another cgroup's process.
func (c workloadCgroup) kill() error {
	if c.path == "" {
		return nil
	}
	if c.v2 {
		err := os.WriteFile(filepath.Join(c.dir(), "cgroup.kill"), []byte("1"), 0)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("kill the cgroup %s: %w", c.path, err)
		}
		if errors.Is(err, fs.ErrNotExist) { // before Linux 5.14, or the cgroup is gone
			c.signal(unix.SIGKILL)
		}
		return c.waitEmpty()
	}
	state := filepath.Join(c.dir(), "freezer.state")
	if err := os.WriteFile(state, []byte("FROZEN"), 0); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone with its container
		}
		return fmt.Errorf("freeze the cgroup %s: %w", c.path, err)
	}
	deadline := time.Now().Add(workloadCgroupSettle)
	for {
		b, err := os.ReadFile(state)
		if err != nil || strings.TrimSpace(string(b)) == "FROZEN" || time.Now().After(deadline) {
			break
		}
		time.Sleep(workloadCgroupPoll)
	}
	c.signal(unix.SIGKILL)
	if err := os.WriteFile(state, []byte("THAWED"), 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("thaw the cgroup %s: %w", c.path, err)
	}
	return c.waitEmpty()
}

// signal sends sig to each process the cgroup lists now, and reports
// whether it listed any.
func (c workloadCgroup) signal(sig unix.Signal) bool {
	pids, _ := c.pids()
	for _, pid := range pids {
		_ = unix.Kill(pid, sig)
	}
	return len(pids) > 0
}

// waitEmpty waits until the cgroup lists no process, killing again what
// it still lists (a process forked while a v2 kill without cgroup.kill
// ran), for workloadCgroupSettle at most.
func (c workloadCgroup) waitEmpty() error {
	deadline := time.Now().Add(workloadCgroupSettle)
	for {
		pids, err := c.pids()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cgroup %s still has %d processes after they were killed", c.path, len(pids))
		}
		if c.v2 {
			c.signal(unix.SIGKILL)
		}
		time.Sleep(workloadCgroupPoll)
	}
}

// remove kills what is left in the cgroup and deletes it.
func (c workloadCgroup) remove() error {
	if c.path == "" {
		return nil
	}
	if err := c.kill(); err != nil {
		return err
	}
	if err := unix.Rmdir(c.dir()); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove the cgroup %s: %w", c.path, err)
	}
	return nil
}
