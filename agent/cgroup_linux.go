package agent

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// cgroup2Magic is CGROUP2_SUPER_MAGIC, the f_type of a cgroup v2 mount.
const cgroup2Magic = 0x63677270

func isCgroup2(root string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(root, &st); err != nil {
		return err
	}
	if st.Type != cgroup2Magic {
		return fmt.Errorf("%s is not a cgroup v2 mount (f_type %#x; cgroup v1 or none)", root, st.Type)
	}
	return nil
}

// probeCgroup starts `true` straight into a scratch cgroup at dir, then
// removes it: clone3 with CLONE_INTO_CGROUP needs Linux 5.7, and the
// cgroup must accept processes (delegation, the no-internal-processes
// rule).
func probeCgroup(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	defer os.Remove(dir)
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	setCgroupFD(cmd.SysProcAttr, int(f.Fd()))
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("start a process into %s: %w", dir, err)
	}
	return nil
}

// setCgroupFD makes the process start in the cgroup open at fd.
func setCgroupFD(attr *syscall.SysProcAttr, fd int) {
	attr.UseCgroupFD, attr.CgroupFD = true, fd
}
