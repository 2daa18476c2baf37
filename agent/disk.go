package agent

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"

	"github.com/bettercompute/compute/wire"
)

// An allocation's disk (diskGb) is its work directory, /work in its
// container. The node's file system is not assumed to have project quotas
// (ext4 and XFS have them only when mounted so), so the daemon measures:
// every DefaultDiskCheckEvery it adds up the blocks the work directory
// uses, and an allocation over its diskGb has every workload stopped, its
// container deleted, and further workloads refused, with reason
// DiskExceeded, until it is unassigned. /tmp and /dev/shm are memory, and
// bounded by their sizes and the allocation's memory limit.

// DefaultDiskCheckEvery is how often work directories are measured.
const DefaultDiskCheckEvery = 10 * time.Second

// workUsage is the space the files under dir use on disk (allocated
// blocks, so a sparse file counts what it really holds). Links are not
// followed.
func workUsage(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished meanwhile, or unreadable: not the tenant's to hide
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				total += st.Blocks * 512
			}
		}
		return nil
	})
	return total
}

// checkDisk measures the work directory of every allocation with a
// container here and stops those over their diskGb.
func (d *daemon) checkDisk() []stoppedInstance {
	var stopped []stoppedInstance
	for _, id := range d.sandbox.containers(context.Background()) {
		a, ok := d.journal.assignment(id)
		if !ok || a.DiskGB <= 0 || d.sandbox.diskExceeded(id) != "" {
			continue
		}
		used, limit := workUsage(d.sandbox.workDir(id)), a.DiskGB<<30
		if used <= limit {
			continue
		}
		why := fmt.Sprintf("%s: /work uses %.2f GiB of its %d GB", wire.ReasonDiskExceeded, float64(used)/(1<<30), a.DiskGB)
		d.sandbox.markDiskExceeded(id, why)
		d.log.Warn("allocation over its disk: its workloads are stopped", "allocation", id, "used", used, "limit", limit)
		stopped = append(stopped, d.instances.stopWhere(d.cfg.StopGrace, false, func(_, alloc string) string {
			if alloc == id {
				return why
			}
			return ""
		})...)
		if err := d.sandbox.stop(context.Background(), id); err != nil {
			d.log.Error("stop the container of an allocation over its disk", "allocation", id, "err", err)
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
