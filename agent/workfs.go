package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bettercompute/compute/wire"
)

// An allocation's /work is a file system of its own, of exactly its disk
// allowance: an ext4 image file in the allocation's directory (root's,
// beside /work, never in it), loop-mounted on the work directory. The
// kernel then refuses a write past the allowance (ENOSPC) at once, where
// the measurement (disk.go) only notices it up to DefaultDiskCheckEvery
// later: an `fallocate` of the node's whole free space can no longer fill
// the node's disk for its other tenants, even for those seconds. The image
// is sparse: the node's file system holds what the allocation wrote (and
// the file system's own bookkeeping), never more than the allowance.
//
// The mount outlives a daemon that was killed, so a restarted daemon
// adopts it as it finds it; a daemon stopped gracefully unmounts it with
// the containers it deletes (unmountWork), and a node's reboot loses it:
// the next container of the allocation mounts the image again. The measurement stays, for what it
// sees on the allocation's file system and as the whole limit where no
// such file system can be made (diskMeasured).

// Disk limits, as a sandbox enforces them (sandbox.diskLimit).
const (
	// diskFilesystem: each allocation's /work is a loop-mounted ext4 of
	// its allowance, and measured.
	diskFilesystem = wire.DiskLimitFilesystem
	// diskMeasured: /work is a directory of the node's file system, only
	// measured (no loop devices, no mkfs.ext4, or containers cannot run).
	diskMeasured = wire.DiskLimitMeasured
	// diskNone: --workload-isolation=none, a development machine, where
	// workloads are plain processes and nothing limits their disk.
	diskNone = wire.DiskLimitNone
)

// workImage is the name of the allocation's file system image in its
// directory.
const workImage = "work.img"

// workMountOptions are the options of the work directory's mount, those
// of the container's bind mount of it: no set-user-id program and no
// device node a tenant made take effect. discard gives the node's file
// system back the blocks of what the allocation deletes.
const workMountOptions = "loop,nosuid,nodev,discard"

// workFS makes allocations' work directories file systems (nil: the
// sandbox only measures them).
type workFS struct {
	mkfs, mount string // the programs' paths
}

// openWorkFS finds out whether work directories can be file systems here:
// the programs are found, and a probe image under root is made, mounted
// and released again (a node without loop devices, or whose kernel cannot
// mount ext4, fails it).
func openWorkFS(ctx context.Context, root string) (*workFS, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("mounting needs root")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return nil, fmt.Errorf("no loop devices: %w", err)
	}
	var w workFS
	var err error
	if w.mkfs, err = findProgram("mkfs.ext4"); err != nil {
		return nil, fmt.Errorf("%w (apt-get install e2fsprogs)", err)
	}
	if w.mount, err = findProgram("mount"); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(root, ".disk-probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		return nil, err
	}
	if err := w.ensure(ctx, dir, work, diskUsage{bytes: minWorkBytes, files: minWorkBytes / bytesPerFile}, 0); err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	if err := releaseWork(ctx, dir, work); err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	return &w, nil
}

// findProgram is name's path on PATH or in the system directories a
// daemon's PATH may lack.
func findProgram(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// ensure makes work (an existing directory in dir, the allocation's
// directory) a mount of the allocation's file system, of size u, made if
// it has no image yet, and its root the user uid's (when uid > 0). A work
// directory already mounted (by a predecessor daemon) is kept as it is.
// One with files but no image (an allocation that started under a daemon
// that only measured) is left a directory, errPlainWork: a file system
// mounted over it would hide its files from the measurement.
func (w *workFS) ensure(ctx context.Context, dir, work string, u diskUsage, uid int) error {
	mounted, err := isMountPoint(work)
	if err != nil {
		return err
	}
	if !mounted {
		img := filepath.Join(dir, workImage)
		if _, err := os.Lstat(img); errors.Is(err, fs.ErrNotExist) {
			entries, err := os.ReadDir(work)
			if err != nil {
				return err
			}
			if len(entries) > 0 {
				return errPlainWork
			}
			if err := w.makeImage(ctx, img, u); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
		if out, err := exec.CommandContext(ctx, w.mount, "-t", "ext4", "-o", workMountOptions, "--", img, work).
			CombinedOutput(); err != nil {
			return fmt.Errorf("mount %s: %w: %s", img, err, strings.TrimSpace(string(out)))
		}
		removeLostFound(work)
	}
	return mkdirNoFollow(work, 0o700, uid)
}

// errPlainWork says that a work directory stays a directory of the node's
// file system.
var errPlainWork = errors.New("the work directory holds files but has no file system image: it stays a directory, only measured")

// makeImage makes the file system image img: a sparse file of u.bytes
// with an ext4 of u.files inodes, no blocks reserved for root (the
// allocation's user would never have them), and nothing written but its
// metadata. It is made under a temporary name and renamed, so that an
// image by its name is always whole.
func (w *workFS) makeImage(ctx context.Context, img string, u diskUsage) error {
	tmp := img + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	err = f.Truncate(u.bytes)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if out, err := exec.CommandContext(ctx, w.mkfs, "-q", "-F", "-m", "0", "-N", strconv.FormatInt(u.files, 10),
		"-E", "lazy_itable_init=1,lazy_journal_init=1", tmp).CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("mkfs.ext4: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return os.Rename(tmp, img)
}

// removeLostFound removes the lost+found directory mkfs makes, root's and
// empty, so that a fresh /work is empty. Only root can have made a
// root-owned entry there, so one the allocation made is never touched.
func removeLostFound(work string) {
	fd, err := unix.Open(work, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstatat(fd, "lost+found", &st, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Uid != 0 {
		return
	}
	_ = unix.Unlinkat(fd, "lost+found", unix.AT_REMOVEDIR) // fails, harmlessly, if not empty
}

// releaseWork unmounts work (every mount stacked on it) and waits until no
// loop device is bound to a file in dir any more, so that the image can go
// with the directory and nothing of the allocation is left. It never
// detaches lazily: a mount still in use after releaseWait is an error (the
// caller deletes the container first, which nothing else on the node has
// reason to enter). The container's killed processes may take the kernel a
// moment to finish, and until their mount namespace is gone the unmount,
// which propagates to its copy there, is refused as busy: it is tried
// again meanwhile, as forget waits for their user id. The loop device is
// released by the kernel (autoclear) once the last mount of its file
// system is gone.
func releaseWork(ctx context.Context, dir, work string) error {
	deadline := time.Now().Add(releaseWait)
	for range 16 {
		mounted, err := isMountPoint(work)
		if errors.Is(err, fs.ErrNotExist) || err == nil && !mounted {
			break
		}
		if err != nil {
			return err
		}
		for {
			err := unix.Unmount(work, 0)
			if err == nil {
				break
			}
			if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				return fmt.Errorf("unmount %s: %w", work, err)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("unmount %s: %w", work, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	for {
		devs := loopDevicesUnder(dir)
		if len(devs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("loop devices %s still hold the file system of %s", strings.Join(devs, ", "), work)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("loop devices %s still hold the file system of %s: %w", strings.Join(devs, ", "), work,
				ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// unmountWork unmounts the /work of every allocation that has one mounted,
// keeping its image, once the daemon deleted their containers at its
// shutdown: as after a reboot, the allocation's next workload mounts it
// again with its files. One that cannot be unmounted is logged and left.
func (s *sandbox) unmountWork(ctx context.Context) {
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !validDomain.MatchString(e.Name()) {
			continue
		}
		work := s.workDir(e.Name())
		if mounted, err := isMountPoint(work); err != nil || !mounted {
			continue
		}
		if err := releaseWork(ctx, s.domainDir(e.Name()), work); err != nil {
			s.log.Error("unmount a /work at shutdown", "allocation", e.Name(), "err", err)
		}
	}
}

// isMountPoint says whether a file system is mounted on dir: dir is on
// another device than its parent.
func isMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return false, &fs.PathError{Op: "lstat", Path: dir, Err: err}
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, &fs.PathError{Op: "lstat", Path: filepath.Dir(dir), Err: err}
	}
	return st.Dev != parent.Dev, nil
}

// loopDevicesUnder are the loop devices whose backing file is in dir.
func loopDevicesUnder(dir string) []string {
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // detached meanwhile
		}
		backing := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
		if strings.HasPrefix(backing, dir+"/") {
			out = append(out, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(f))))
		}
	}
	return out
}

// fitrim is FITRIM, _IOWR('X', 121, struct fstrim_range) in the generic
// ioctl encoding of amd64 and arm64 (x/sys/unix does not define it).
const fitrim = 0xc0185879

// trimWork gives the node's file system back at once the blocks of the
// file system mounted on work that hold nothing any more: what was deleted
// is committed (syncfs), then discarded (FITRIM), where the discard mount
// option would give them back only as the journal commits.
func trimWork(work string) error {
	fd, err := unix.Open(work, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return fmt.Errorf("syncfs %s: %w", work, err)
	}
	r := struct{ start, len, minLen uint64 }{len: ^uint64(0)}
	switch _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), fitrim, uintptr(unsafe.Pointer(&r))); errno {
	case 0, unix.EOPNOTSUPP: // a node file system that cannot punch holes keeps the blocks until the release
		return nil
	default:
		return fmt.Errorf("trim %s: %w", work, errno)
	}
}
