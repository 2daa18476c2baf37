package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Crash stops the server the way a power cut would, for fault tests: `pg_ctl
// stop -m immediate` kills every backend without a checkpoint, so the next
// start replays the WAL. Only committed transactions survive, which is the
// property the fault tests check. The cluster stays ours (the directory
// lock is kept): call Recover to bring it back on the same port.
func (c *Cluster) Crash(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("pgcluster: Crash after Stop")
	}
	return c.pgCtlStop(ctx, "immediate")
}

// Recover starts the server again after Crash, on the same port and with the
// same options: `pg_ctl restart` reuses the command line saved in
// postmaster.opts by the previous start, so clients keep their URL. It
// returns once the server accepts connections (crash recovery included).
func (c *Cluster) Recover(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("pgcluster: Recover after Stop")
	}
	if c.running() {
		return nil
	}
	logStart := fileSize(c.logPath)
	out, err := c.run.output(ctx, c.bins.pgCtl, "restart", "-w",
		"-t", strconv.Itoa(int(startTimeout/time.Second)),
		"-D", c.dataDir, "-l", c.logPath)
	if err != nil {
		return fmt.Errorf("pgcluster: pg_ctl restart: %w\n%s\nserver log (%s):\n%s",
			err, strings.TrimSpace(out), c.logPath, logTail(c.logPath, logStart))
	}
	if c.pid, err = postmasterPID(c.dataDir); err != nil {
		return fmt.Errorf("pgcluster: pg_ctl restart: server started but %w", err)
	}
	return nil
}
