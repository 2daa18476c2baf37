package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// StartStandby makes a streaming replica of c in opts.Dir and starts it:
// pg_basebackup copies c's data directory there with -R, which writes the
// standby.signal file and primary_conninfo (c's URL), so the new server
// starts as a hot standby that replays c's WAL and answers read-only
// queries. c needs wal_level replica (PostgreSQL's default) and a
// replication entry in pg_hba.conf (initdb's trust defaults have one for
// 127.0.0.1), and must listen on TCP (not Options.SocketOnly). opts.Dir
// must not hold a cluster yet. The standby runs as the server's user, like
// c, on a port of its own.
func (c *Cluster) StartStandby(ctx context.Context, opts Options) (*Cluster, error) {
	if c.socketOnly {
		return nil, errors.New("pgcluster: a standby needs a primary that listens on TCP")
	}
	if opts.Dir == "" {
		return nil, errors.New("pgcluster: Options.Dir is empty")
	}
	dir, err := prepareDir(ctx, c.run, opts.Dir, c.log)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err == nil {
		return nil, fmt.Errorf("pgcluster: %s already holds a cluster", data)
	}
	if err := c.run.ensureDir(data); err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	bin := c.bins.pgCtl
	if real, err := filepath.EvalSymlinks(bin); err == nil {
		bin = real // /usr/local/bin/pg_ctl → /usr/lib/postgresql/15/bin/pg_ctl
	}
	basebackup := filepath.Join(filepath.Dir(bin), "pg_basebackup")
	if out, err := c.run.output(ctx, basebackup, "-R", "-X", "stream", "--checkpoint=fast", "--no-sync", "-D", data, "-d", c.URL("postgres")); err != nil {
		return nil, fmt.Errorf("pgcluster: pg_basebackup: %w\n%s", err, strings.TrimSpace(out))
	}
	opts.Dir = dir
	return Start(ctx, opts)
}
