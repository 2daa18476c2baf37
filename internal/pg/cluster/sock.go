package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// socketPort names the socket file (.s.PGSQL.5432) of a cluster that
// listens on no TCP port. Its directory is its own, so the usual number
// never collides with another server's.
const socketPort = 5432

// prepareSockDir makes the unix socket directory: Dir/sock, mode 0700 and
// owned by the server's user, so that only that user (and root) can reach
// the socket. When that path is too long for a unix socket, a TCP cluster
// goes without a socket (it is only a convenience for psql there), and a
// SocketOnly cluster gets a fresh directory under the system temporary
// directory instead, which Stop removes.
//
// It runs after any server of an earlier run was stopped, with the
// directory lock held: socket files left in Dir/sock by a crash are stale
// and removed, so a fixed socketPort never meets a lock file whose pid was
// reused by some other process.
func (c *Cluster) prepareSockDir(ctx context.Context) error {
	dir := filepath.Join(c.dir, "sock")
	if len(dir) <= maxSockDirLen {
		if err := c.run.ensureDir(dir); err != nil {
			return fmt.Errorf("socket dir: %w", err)
		}
		c.sockDir = dir
		return removeStaleSockets(dir)
	}
	if !c.socketOnly {
		c.log.Info("unix socket disabled: directory path too long", "dir", dir)
		return nil
	}
	// MkdirTemp adds at most 10 digits to the prefix.
	const prefix, suffixLen = "pgsock-", 10
	for _, parent := range []string{os.TempDir(), "/tmp"} {
		if len(filepath.Join(parent, prefix))+suffixLen > maxSockDirLen {
			continue
		}
		if ok, err := c.run.canEnter(ctx, parent); err != nil || !ok {
			continue
		}
		tmp, err := os.MkdirTemp(parent, prefix) // 0700, a name nobody chose for us
		if err != nil {
			return fmt.Errorf("socket dir: %w", err)
		}
		c.sockDir, c.tempSockDir = tmp, true
		if err := c.run.ensureDir(tmp); err != nil {
			return fmt.Errorf("socket dir: %w", err)
		}
		c.log.Info("socket dir under the cluster dir is too long for a unix socket; using a temporary one",
			"dir", dir, "socket_dir", tmp)
		return nil
	}
	return fmt.Errorf("socket dir: %s is too long for a unix socket, and no short temporary directory the server's user can enter was found", dir)
}

// removeStaleSockets removes the socket and socket lock files in dir.
func removeStaleSockets(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".s.PGSQL.") {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove stale socket: %w", err)
			}
		}
	}
	return nil
}

// removeTempSockDir removes a socket directory that Start created under the
// system temporary directory; Dir/sock stays for the next run.
func (c *Cluster) removeTempSockDir() error {
	if !c.tempSockDir {
		return nil
	}
	if err := os.RemoveAll(c.sockDir); err != nil {
		return fmt.Errorf("pgcluster: remove socket dir: %w", err)
	}
	c.tempSockDir = false
	return nil
}
