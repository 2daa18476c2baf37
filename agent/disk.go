package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bettercompute/compute/wire"
)

// An allocation's disk (diskGb) is its work directory, /work in its
// container: where it can be, a file system of exactly its allowance,
// which the kernel keeps it within (workfs.go). The node's file system is
// not assumed to have project quotas (ext4 and XFS have them only when
// mounted so), so the daemon measures as well, and where no such file
// system can be made the measurement is the whole limit:
// every DefaultDiskCheckEvery it adds up the blocks and the files the
// allocation holds on that file system — what is under its work directory,
// and files its processes deleted but still hold open, which no directory
// walk sees and which fill the disk all the same — and an allocation over
// its allowance (diskAllowance) has every workload stopped, its container
// deleted, and further workloads refused, with reason DiskExceeded, until
// it is unassigned. The node's inodes are shared too, so the files count
// against a share of them (diskAllowance). /tmp and /dev/shm are memory, and
// bounded by their sizes and the allocation's memory limit.

// DefaultDiskCheckEvery is how often work directories are measured.
const DefaultDiskCheckEvery = 10 * time.Second

// minWorkBytes is the disk an allocation that asked for none (diskGb 0)
// may still use: its instances' directories and small files.
const minWorkBytes = 64 << 20

// bytesPerFile is the share of the node's inodes an allocation's bytes
// buy: one file per 16 KiB of its allowance (ext4's default ratio of bytes
// to inodes), so that many tiny files cannot use up the file system's
// inodes while staying under the bytes.
const bytesPerFile = 16 << 10

// diskAllowance is what allocation a may hold on the node's file system:
// its diskGb, at least minWorkBytes, and one file per bytesPerFile of it.
func diskAllowance(a wire.AssignPayload) diskUsage {
	b := max(a.DiskGB<<30, minWorkBytes)
	return diskUsage{bytes: b, files: b / bytesPerFile}
}

// diskUsage is space on the node's file system: bytes in allocated blocks
// (a sparse file counts what it really holds) and files (inodes).
type diskUsage struct{ bytes, files int64 }

// over says how u exceeds limit, or "".
func (u diskUsage) over(limit diskUsage, diskGB int64) string {
	of := fmt.Sprintf("its %d GB", diskGB)
	if diskGB <= 0 {
		of = fmt.Sprintf("the %d MiB of a reservation without diskGb", minWorkBytes>>20)
	}
	switch {
	case u.bytes > limit.bytes:
		return fmt.Sprintf("%s: /work uses %.2f GiB of %s", wire.ReasonDiskExceeded, float64(u.bytes)/(1<<30), of)
	case u.files > limit.files:
		return fmt.Sprintf("%s: /work holds %d files, at most %d for %s", wire.ReasonDiskExceeded, u.files, limit.files, of)
	}
	return ""
}

// workUsage is what the files under dir use, and the files that processes
// pids hold open on dir's file system after deleting them. Links are not
// followed. The walk goes through an os.Root, which opens each directory
// relative to its parent's descriptor: a workload can build, one relative
// step at a time, a chain of directories whose path is longer than the
// kernel takes (PATH_MAX, 4,096 bytes), and a walk by path could not read
// below it, so whatever the chain held went unmeasured.
func workUsage(dir string, pids []int) diskUsage {
	var u diskUsage
	tree, err := os.OpenRoot(dir)
	if err != nil {
		return u // no work directory (yet): nothing used
	}
	defer tree.Close()
	_ = fs.WalkDir(tree.FS(), ".", func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished meanwhile, or unreadable: not the tenant's to hide
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				u.bytes += st.Blocks * 512
				u.files++
			}
		}
		return nil
	})
	var root unix.Stat_t
	if unix.Stat(dir, &root) != nil {
		return u
	}
	seen := map[uint64]bool{}
	for _, pid := range pids {
		fds, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
		for _, fd := range fds {
			var st unix.Stat_t // stat follows the fd to the open file, deleted or not
			if unix.Stat("/proc/"+strconv.Itoa(pid)+"/fd/"+fd.Name(), &st) != nil {
				continue
			}
			if st.Nlink != 0 || st.Dev != root.Dev || seen[st.Ino] {
				continue // linked (the walk counts it), elsewhere (/tmp, /dev/shm, pipes), or counted
			}
			seen[st.Ino] = true
			u.bytes += st.Blocks * 512
			u.files++
		}
	}
	return u
}

// checkDisk measures the work directory of every allocation with a
// container here and stops those over their allowance.
func (d *daemon) checkDisk() []stoppedInstance {
	var stopped []stoppedInstance
	for _, id := range d.sandbox.containers(context.Background()) {
		a, ok := d.journal.assignment(id)
		if !ok || d.sandbox.diskExceeded(id) != "" {
			continue
		}
		used := workUsage(d.sandbox.workDir(id), cgroupTreePIDs(d.sandbox.cfg.CgroupRoot, d.sandbox.cgroupsPath(id)))
		why := used.over(diskAllowance(a), a.DiskGB)
		if why == "" {
			continue
		}
		d.sandbox.markDiskExceeded(id, why)
		d.log.Warn("allocation over its disk: its workloads are stopped", "allocation", id, "bytes", used.bytes, "files", used.files)
		stopped = append(stopped, d.instances.stopWhere(d.cfg.StopGrace, false, func(_, alloc string) string {
			if alloc == id {
				return why
			}
			return ""
		})...)
		if err := d.sandbox.stop(context.Background(), id); err != nil {
			d.log.Error("stop the container of an allocation over its disk", "allocation", id, "err", err)
			continue
		}
		if err := d.sandbox.reclaimWork(id); err != nil {
			d.log.Error("empty the work directory of an allocation over its disk", "allocation", id, "err", err)
		}
	}
	d.reportStopped(stopped)
	return stopped
}

// diskWatch runs checkDisk every Config.DiskCheckEvery until ctx ends.
func (d *daemon) diskWatch(ctx context.Context) {
	every := d.cfg.DiskCheckEvery
	if every <= 0 {
		every = DefaultDiskCheckEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.checkDisk()
		}
	}
}

// reclaimWork empties the work directory of an allocation stopped for its
// disk, once its container is gone. What it wrote is the node's disk: on a
// node that only measures, left until the release, a tenant's `fallocate`
// of the node's free space in one call (which the 10 s measurement cannot
// outrun) would keep the daemon, the node's other tenants and everything
// else on that file system out of space for the rest of its reservation;
// a /work that is a file system of its own (workfs.go) has its blocks
// given back to the node's file system at once (trimWork). Nothing of the
// allocation runs any more, nor can, so nothing can reach those files
// again; Kubernetes likewise deletes an evicted pod's emptyDir. The
// directory itself stays, empty, until the release. RemoveAll removes
// links, it does not follow them.
func (s *sandbox) reclaimWork(domain string) error {
	dir := s.workDir(domain)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	if mounted, err := isMountPoint(dir); err != nil || !mounted {
		return err
	}
	return trimWork(dir)
}
