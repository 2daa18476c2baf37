package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// DefaultCgroupRoot is where the cgroup v2 hierarchy is mounted.
const DefaultCgroupRoot = "/sys/fs/cgroup"

// cgroupParent is the daemon's cgroup under the root: one child per
// allocation, <root>/compute/<allocation>.
const cgroupParent = "compute"

// cpuPeriod is the cpu.max period, in microseconds.
const cpuPeriod = 100000

// cgroups applies an allocation's CPU and memory to its workloads through
// cgroup v2: <root>/compute/<allocation> with cpu.max ("<vcpu*100000>
// 100000": vcpu CPUs' worth of time) and memory.max (memoryMb MiB), and
// every workload process of the allocation is started in it (clone3 with
// CLONE_INTO_CGROUP, SysProcAttr.UseCgroupFD), so not even its first
// instruction runs outside its limits.
//
// When the root is not a writable cgroup v2 hierarchy with the cpu and
// memory controllers (cgroup v1, a container without cgroup delegation,
// a kernel older than 5.7), the daemon logs why once and runs workloads
// without CPU and memory limits: the control plane's bookings still keep
// allocations' devices apart, but their CPU and memory are then shared.
type cgroups struct {
	root string
	log  *slog.Logger

	once sync.Once
	base string // <root>/compute when usable, else ""

	mu  sync.Mutex
	fds map[string]*os.File // allocation → its cgroup directory, open
}

func newCgroups(root string, log *slog.Logger) *cgroups {
	if root == "" {
		root = DefaultCgroupRoot
	}
	if log == nil {
		log = slog.Default()
	}
	return &cgroups{root: root, log: log, fds: map[string]*os.File{}}
}

// usable reports whether limits can be applied, finding out (and logging
// a fallback) the first time.
func (c *cgroups) usable() bool {
	c.once.Do(func() {
		if err := c.setup(); err != nil {
			c.log.Warn("workloads run without CPU and memory limits: cgroup v2 is not usable", "root", c.root, "err", err)
			return
		}
		c.base = filepath.Join(c.root, cgroupParent)
		c.log.Info("workload CPU and memory limits through cgroup v2", "dir", c.base)
	})
	return c.base != ""
}

// setup checks the hierarchy, creates <root>/compute with the cpu and
// memory controllers enabled for its children, and starts a probe process
// in a child to prove that workloads can be placed there.
func (c *cgroups) setup() error {
	if err := isCgroup2(c.root); err != nil {
		return err
	}
	ctrls, err := os.ReadFile(filepath.Join(c.root, "cgroup.controllers"))
	if err != nil {
		return err
	}
	for _, want := range []string{"cpu", "memory"} {
		if !slices.Contains(strings.Fields(string(ctrls)), want) {
			return fmt.Errorf("controller %s is not available in %s", want, c.root)
		}
	}
	base := filepath.Join(c.root, cgroupParent)
	if err := enableControllers(c.root); err != nil {
		return err
	}
	if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := enableControllers(base); err != nil {
		return err
	}
	return probeCgroup(filepath.Join(base, fmt.Sprintf(".probe-%d", os.Getpid())))
}

// enableControllers enables cpu and memory for dir's children.
func enableControllers(dir string) error {
	cur, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	have := strings.Fields(string(cur))
	if slices.Contains(have, "cpu") && slices.Contains(have, "memory") {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+cpu +memory"), 0o644); err != nil {
		return fmt.Errorf("enable cpu and memory controllers in %s: %w", dir, err)
	}
	return nil
}

// fd returns an open directory of the allocation's cgroup, with its limits
// written, or -1 when limits are not usable here.
func (c *cgroups) fd(allocationID string, vcpu, memoryMB int64) (int, error) {
	if allocationID == "" || !c.usable() {
		return -1, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.fds[allocationID]; f != nil {
		return int(f.Fd()), nil
	}
	dir := filepath.Join(c.base, allocationID)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return -1, fmt.Errorf("cgroup of allocation %s: %w", allocationID, err)
	}
	if err := writeLimits(dir, vcpu, memoryMB); err != nil {
		return -1, fmt.Errorf("cgroup of allocation %s: %w", allocationID, err)
	}
	f, err := os.Open(dir)
	if err != nil {
		return -1, fmt.Errorf("cgroup of allocation %s: %w", allocationID, err)
	}
	c.fds[allocationID] = f
	return int(f.Fd()), nil
}

// remove deletes the allocation's cgroup once nothing of it runs.
func (c *cgroups) remove(allocationID string) {
	if allocationID == "" || c.base == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f := c.fds[allocationID]; f != nil {
		_ = f.Close()
		delete(c.fds, allocationID)
	}
	if err := os.Remove(filepath.Join(c.base, allocationID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.log.Warn("remove cgroup", "allocation", allocationID, "err", err)
	}
}

// writeLimits writes cpu.max and memory.max of a cgroup: vcpu CPUs per
// period and memoryMB MiB; zero is no limit ("max").
func writeLimits(dir string, vcpu, memoryMB int64) error {
	cpu := "max " + strconv.Itoa(cpuPeriod)
	if vcpu > 0 {
		cpu = fmt.Sprintf("%d %d", vcpu*cpuPeriod, cpuPeriod)
	}
	mem := "max"
	if memoryMB > 0 {
		mem = strconv.FormatInt(memoryMB<<20, 10)
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu.max"), []byte(cpu), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "memory.max"), []byte(mem), 0o644)
}
