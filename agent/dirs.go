package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// The root daemon writes into directories a tenant may influence only
// through these: the workload root is checked, never trusted, and no
// directory it makes follows a link.

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

// mkdirNoFollow makes dir (its parent must exist) with perm, owned by uid
// when uid > 0, without following a symbolic link at its place: an
// existing link is an error, an existing directory is kept.
func mkdirNoFollow(dir string, perm os.FileMode, uid int) error {
	parent, err := os.Open(filepath.Dir(dir))
	if err != nil {
		return err
	}
	defer parent.Close()
	name := filepath.Base(dir)
	if err := unix.Mkdirat(int(parent.Fd()), name, uint32(perm)); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fd, err := unix.Openat(int(parent.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	defer unix.Close(fd)
	if uid > 0 {
		if err := unix.Fchown(fd, uid, uid); err != nil {
			return err
		}
	}
	return unix.Fchmod(fd, uint32(perm))
}
