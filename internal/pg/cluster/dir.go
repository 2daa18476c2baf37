package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// maxSockDirLen keeps "<dir>/.s.PGSQL.<port>" within the 107 bytes a unix
// socket path may have on Linux; PostgreSQL refuses to start otherwise.
const maxSockDirLen = 107 - len("/.s.PGSQL.65535")

// prepareDir returns the absolute directory the cluster will live in,
// creating it if needed: requested itself if the server's user can reach
// it, else a directory under os.TempDir() named after a hash of requested,
// so that the same request finds the same cluster next time.
func prepareDir(ctx context.Context, run runner, requested string, log *slog.Logger) (string, error) {
	dir, err := filepath.Abs(requested)
	if err != nil {
		return "", fmt.Errorf("cluster dir: %w", err)
	}
	// pg_ctl pastes the data directory and log file paths, in double
	// quotes, into a /bin/sh command line.
	if strings.ContainsAny(dir, "\"$`\\\n") {
		return "", fmt.Errorf("cluster dir %q: must not contain any of \" $ ` \\ or a newline", dir)
	}
	ok, err := reachable(ctx, run, dir)
	if err != nil {
		return "", err
	}
	if ok {
		return dir, mkdirTraversable(dir)
	}
	fallback := fallbackDir(dir)
	log.Info("postgres user cannot enter cluster dir; using fallback", "dir", dir, "fallback", fallback)
	if ok, err := reachable(ctx, run, fallback); err != nil {
		return "", err
	} else if !ok {
		return "", fmt.Errorf("the postgres user can enter neither %s nor %s", dir, fallback)
	}
	if err := mkdirTraversable(fallback); err != nil {
		return "", err
	}
	// The fallback's name is predictable and os.TempDir() is usually world
	// writable: only use it if it is a real directory that we own.
	fi, err := os.Lstat(fallback)
	if err != nil {
		return "", fmt.Errorf("cluster dir: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || (ok && int(st.Uid) != os.Geteuid()) {
		return "", fmt.Errorf("cluster dir %s: not a directory owned by uid %d", fallback, os.Geteuid())
	}
	return fallback, nil
}

// fallbackDir is where prepareDir puts the cluster of dir (an absolute
// path) when the server's user cannot enter dir. `make clean` removes it
// too, naming it the same way.
func fallbackDir(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(os.TempDir(), "pgcluster-"+hex.EncodeToString(sum[:6]))
}

// lockDir takes an exclusive lock on dir for as long as the returned file
// is open. It tells a server left behind by a process that is gone, which
// Start may stop, from one that a live process is using, which it must not.
// The kernel drops the lock when its holder dies, however it dies.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "pgcluster.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("cluster dir %s is in use by another running process (%s is locked)", dir, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// reachable reports whether the server's user can enter dir, or, if it does
// not exist yet, its deepest existing ancestor (what mkdirTraversable
// creates below that is open to everyone).
func reachable(ctx context.Context, run runner, dir string) (bool, error) {
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return false, fmt.Errorf("cluster dir: %s is not a directory", p)
			}
			return run.canEnter(ctx, p)
		}
		if !errors.Is(err, fs.ErrNotExist) || p == filepath.Dir(p) {
			return false, fmt.Errorf("cluster dir: %w", err)
		}
	}
}

// mkdirTraversable is os.MkdirAll(dir, 0755), except that directories it
// creates are chmod'ed to 0755: under a restrictive umask MkdirAll would lock
// the server's user out of them.
func mkdirTraversable(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirTraversable(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // created concurrently
		}
		return fmt.Errorf("cluster dir: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("cluster dir: %w", err)
	}
	return nil
}

// dataVersion returns the PG_VERSION of the cluster in dataDir, or "" if
// there is none yet. An empty dataDir is removed so that initdb can create
// it afresh.
func dataVersion(dataDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "PG_VERSION"))
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("data dir: %w", err)
	}
	entries, err := os.ReadDir(dataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("data dir: %w", err)
	}
	if len(entries) > 0 {
		// Not ours to delete: initdb publishes data dirs atomically, so
		// this was put here by someone else.
		return "", fmt.Errorf("data dir %s is not empty but holds no PostgreSQL cluster (no PG_VERSION); move it away", dataDir)
	}
	if err := os.Remove(dataDir); err != nil {
		return "", fmt.Errorf("data dir: %w", err)
	}
	return "", nil
}

// initdb creates a cluster in dataDir. It initialises a sibling directory
// and renames it into place, so that a data directory with a PG_VERSION is
// always complete even if initdb is interrupted.
func initdb(ctx context.Context, run runner, bins binaries, dataDir string, fast bool) error {
	tmp := dataDir + ".initdb"
	if err := os.RemoveAll(tmp); err != nil { // left by an interrupted initdb
		return fmt.Errorf("initdb: %w", err)
	}
	if err := run.ensureDir(tmp); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	// The C locale exists on every machine (initdb fails on one that is not
	// installed) and sorts by bytes, so indexes never depend on the C
	// library's collation tables.
	args := []string{"-D", tmp, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"}
	if fast {
		args = append(args, "--no-sync")
	}
	if out, err := run.output(ctx, bins.initdb, args...); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, strings.TrimSpace(out))
	}
	if err := os.Rename(tmp, dataDir); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	if fast {
		return nil
	}
	parent, err := os.Open(filepath.Dir(dataDir))
	if err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	defer parent.Close()
	if err := parent.Sync(); err != nil { // make the rename durable
		return fmt.Errorf("initdb: %w", err)
	}
	return nil
}

// stopLeftover clears the way for a new server: it stops a server that an
// earlier process started in this directory and never stopped, and removes
// a postmaster.pid that a crash left behind but postgres would not dismiss
// on its own (an empty one, or one whose pid now belongs to another process
// of the postgres user, or to a zombie).
func (c *Cluster) stopLeftover(ctx context.Context) error {
	pid, err := postmasterPID(c.dataDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err == nil && processAlive(pid):
		c.log.Info("stopping postgres left running by an earlier run", "dir", c.dataDir, "pid", pid)
		return c.pgCtlStop(ctx, "fast")
	}
	c.log.Info("removing stale postmaster.pid", "dir", c.dataDir, "pid", pid, "err", err)
	if err := os.Remove(filepath.Join(c.dataDir, "postmaster.pid")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale postmaster.pid: %w", err)
	}
	return nil
}

// running reports whether a live server holds the data directory.
func (c *Cluster) running() bool {
	pid, err := postmasterPID(c.dataDir)
	return err == nil && processAlive(pid)
}

// postmasterPID reads the server's pid from the first line of
// postmaster.pid.
func postmasterPID(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("postmaster.pid: bad pid line %q", line)
	}
	return pid, nil
}

// freePort asks the kernel for a port that is free on 127.0.0.1 right now.
// Someone may take it before the server binds it; start retries then.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	return port, nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logTail returns the last lines the server logged after offset from, for
// error messages: the reason a server did not start is only in its log.
func logTail(path string, from int64) string {
	const maxBytes, maxLines = 16 << 10, 40
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read server log: %v)", err)
	}
	defer f.Close()
	if size := fileSize(path); size-from > maxBytes {
		from = size - maxBytes
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return fmt.Sprintf("(cannot read server log: %v)", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read server log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	if s := strings.Join(lines, "\n"); s != "" {
		return s
	}
	return "(server log is empty)"
}

// shellQuote quotes s as one word for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
