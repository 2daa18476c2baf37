package chaos

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The kernel's view of a node's workloads: every allocation runs in a
// container whose cgroup is /compute/<node>/<allocation> (the agent's
// layout), and the container's device cgroup says which GPUs its
// processes may open, whatever their environment says. These helpers
// read that view.

// cgroupRoot is where this machine mounts its cgroup hierarchies.
const cgroupRoot = "/sys/fs/cgroup"

// nvidiaMajor is the NVIDIA GPUs' character-device major (fake GPUs
// use it too); minor 255 is the driver's control device, not a GPU.
const nvidiaMajor = 195

// runningContainer is an allocation's container with processes in it,
// and the GPU minors its device cgroup allows.
type runningContainer struct {
	node, allocation string
	minors           []int
}

// cgroupV2 reports whether this machine runs the unified hierarchy.
func cgroupV2() bool {
	var st syscall.Statfs_t
	return syscall.Statfs(cgroupRoot, &st) == nil && st.Type == 0x63677270
}

// procsFile is the process list of a container's cgroup.
func procsFile(node, allocation string) string {
	if cgroupV2() {
		return filepath.Join(cgroupRoot, "compute", node, allocation, "cgroup.procs")
	}
	return filepath.Join(cgroupRoot, "pids", "compute", node, allocation, "cgroup.procs")
}

// cgroupPIDs are the processes in a container's cgroup.
func cgroupPIDs(node, allocation string) []int {
	b, err := os.ReadFile(procsFile(node, allocation))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// runningContainers lists the containers of the nodes named with
// processes in them, and the GPUs the kernel lets each open. On cgroup v1
// that is the devices controller's devices.list; on v2 the allow-list is
// a BPF program, so the container's spec (which runc compiled into it) in
// its bundle under wlRoot/<short node>/<allocation>/config.json is read
// instead.
//
// Only this test's containers count: another test run on the machine may
// name its nodes alike (its cgroups are under the same /compute/<node>).
// A container's bundle, wlRoot/<short node>/<allocation>, is made before
// it starts and removed after it was deleted.
func runningContainers(t *testing.T, wlRoot string, nodes map[string]string) []runningContainer {
	t.Helper()
	var out []runningContainer
	for node, short := range nodes {
		dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(procsFile(node, "x"))), "*"))
		for _, dir := range dirs {
			alloc := filepath.Base(dir)
			if st, err := os.Stat(dir); err != nil || !st.IsDir() || !ours(wlRoot, short, alloc) || !started(cgroupPIDs(node, alloc)) {
				continue
			}
			c := runningContainer{node: node, allocation: alloc}
			if cgroupV2() {
				c.minors = specMinors(filepath.Join(wlRoot, short, alloc, "config.json"))
			} else {
				c.minors = listMinors(filepath.Join(cgroupRoot, "devices", "compute", node, alloc, "devices.list"))
			}
			out = append(out, c)
		}
	}
	return out
}

// ours reports whether the allocation's container is this test's: its
// bundle is in the test's workload directory.
func ours(wlRoot, short, alloc string) bool {
	_, err := os.Stat(filepath.Join(wlRoot, short, alloc))
	return err == nil
}

// started reports whether any of pids is past runc's set-up: while a
// container is being made, its cgroup holds only runc's own init, which
// runs no workload code and before whose exec the device rules are set.
// That init is `runc init`, re-executed as /proc/self/exe: its name is
// "exe" until it renames itself runc:[…], and its cgroup may still allow
// every device meanwhile.
func started(pids []int) bool {
	for _, pid := range pids {
		if !runcInit(pid) {
			return true
		}
	}
	return false
}

// runcInit reports whether pid is runc's own init (or is gone).
func runcInit(pid int) bool {
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil || strings.HasPrefix(string(comm), "runc") {
		return true
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(cmdline) == 0 {
		// No arguments: a zombie, or a child runc has forked and not yet
		// made anything of (seen once on a loaded machine, with the
		// container's devices still at the cgroup's default); a workload
		// has at least its program's name.
		return true
	}
	args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	return len(args) == 2 && filepath.Base(args[0]) == "runc" && args[1] == "init"
}

// listMinors are the GPU minors a v1 devices.list allows to be read or
// written ("c 195:N rw…"). A rule that would allow every GPU ("a …",
// "c *:* rw", "c 195:* rw") is reported as minor -1, which no test
// accepts; mknod-only rules ("c *:* m", runc's default) open nothing.
func listMinors(path string) []int {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || !strings.ContainsAny(fields[2], "rw") {
			continue
		}
		if fields[0] == "a" {
			out = append(out, -1)
			continue
		}
		maj, min, _ := strings.Cut(fields[1], ":")
		switch {
		case fields[0] != "c" || (maj != strconv.Itoa(nvidiaMajor) && maj != "*"):
		case min == "*":
			out = append(out, -1)
		case maj == strconv.Itoa(nvidiaMajor) && min != "255":
			if n, err := strconv.Atoi(min); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// specMinors are the GPU minors a container's OCI spec allows.
func specMinors(path string) []int {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var spec struct {
		Linux struct {
			Resources struct {
				Devices []struct {
					Allow        bool
					Type         string
					Major, Minor *int64
				}
			}
		}
	}
	if json.Unmarshal(b, &spec) != nil {
		return nil
	}
	var out []int
	for _, d := range spec.Linux.Resources.Devices {
		if !d.Allow || d.Major == nil || *d.Major != nvidiaMajor {
			continue
		}
		if d.Minor == nil {
			out = append(out, -1)
		} else if *d.Minor != 255 {
			out = append(out, int(*d.Minor))
		}
	}
	return out
}

// keeperProcess is the pid of the allocation's keeper, the container's
// first process, under whichever shell the node's daemon chose for it
// (bash where the node has one that can, else /bin/sh); 0 when none.
func keeperProcess(node, allocation string) int {
	if pid := containerProcess(node, allocation, "/bin/bash -c trap"); pid != 0 {
		return pid
	}
	return containerProcess(node, allocation, "/bin/sh -c trap")
}

// containerProcess is the host pid of the process in the allocation's
// container whose command line starts with prefix, or 0.
func containerProcess(node, allocation, prefix string) int {
	for _, pid := range cgroupPIDs(node, allocation) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil && strings.HasPrefix(strings.ReplaceAll(string(b), "\x00", " "), prefix) {
			return pid
		}
	}
	return 0
}
