// Package cluster runs a private PostgreSQL cluster from the machine's own
// binaries, for when the control plane is given no DATABASE_URL (local runs
// and tests).
//
// The cluster lives in one directory that is reused across runs:
//
//	Dir/data          the data directory (PGDATA)
//	Dir/sock          the unix socket directory: mode 0700, owned by the server's user
//	Dir/postgres.log  the server log, appended to by every run
//
// By default the server also listens on a free 127.0.0.1 port, which is what
// URL returns: pgbench, PgBouncer and the test harness connect over TCP. With
// Options.SocketOnly it listens on no TCP address at all, only on the unix
// socket, and URL connects through it (`compute serve`'s private cluster).
//
// PostgreSQL refuses to run as root, so when this process is root every
// PostgreSQL program is run as the "postgres" OS user, and the files it needs
// are handed to that user. If that user cannot reach the requested directory
// (for example one under /root), the cluster is kept under os.TempDir()
// instead, at a path derived from the requested one so that it is still
// reused from one run to the next; Cluster.Dir says where it ended up.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options say where the cluster lives and how it is tuned.
type Options struct {
	Dir    string       // data lives in Dir/data; created if missing; reused (not re-initdb'd) if already initialised
	Fast   bool         // tests: fsync=off, synchronous_commit=off, full_page_writes=off
	Logger *slog.Logger // may be nil
	// Preload names server libraries to load at start
	// (shared_preload_libraries), e.g. pg_stat_statements for the
	// benchmark's statement counts. A library the installation lacks is
	// left out (and logged) rather than keeping the server from starting.
	Preload []string
	// SocketOnly makes the server listen on no TCP address
	// (listen_addresses = ''), only on its unix socket, in a directory of
	// mode 0700 owned by the server's user (postgres when this process is
	// root): only that user and root can connect, although authentication
	// is trust. URL then connects through the socket, and Port is 0.
	// The socket directory is Dir/sock, or, when that path is too long for
	// a unix socket, a fresh directory under the system temporary directory,
	// removed by Stop. `compute serve` sets it: on a node whose workloads
	// share the machine, a TCP listener with trust authentication would let
	// any local process connect as superuser.
	SocketOnly bool
}

// Cluster is a running PostgreSQL server started by Start. By default it
// listens on 127.0.0.1 only, but with trust authentication: any user of this
// machine can connect as superuser. That suits development and tests, not a
// machine shared with people who must not see the data; Options.SocketOnly
// closes it to everyone but the server's user and root.
type Cluster struct {
	dir     string // the directory actually used (Options.Dir or its fallback)
	dataDir string
	logPath string
	port    int // TCP port, or only the socket file's number when socketOnly
	pid     int // the postmaster we started, so Stop never stops someone else's
	bins    binaries
	run     runner
	log     *slog.Logger
	lock    *os.File // flock'ed while the cluster is ours; see lockDir

	socketOnly bool
	sockDir    string // the unix socket directory; "" when the socket is disabled
	// tempSockDir says that Start created sockDir under the system
	// temporary directory (Dir/sock was too long): Stop removes it.
	tempSockDir bool

	preload []string

	mu      sync.Mutex
	stopped bool
}

const (
	// startTimeout bounds how long pg_ctl waits for the server to accept
	// connections. It is generous because a server that crashed last time
	// replays its WAL before it is ready.
	startTimeout = 120 * time.Second
	// stopTimeout bounds pg_ctl stop. A fast shutdown only has to
	// checkpoint, which is quick on a cluster this size.
	stopTimeout = 60 * time.Second
	// startAttempts is how often Start picks a new port when the one it
	// chose was taken between probing and binding.
	startAttempts = 3
)

// Start makes sure a cluster exists in opts.Dir (running initdb only the
// first time) and starts a server for it on a free 127.0.0.1 port. A server
// left running in the same directory by an earlier process that has exited
// is stopped first, and a stale postmaster.pid left by a crash does not
// prevent starting. While a Cluster is running, Start on the same directory
// fails, from any process, rather than take the server away from it.
//
// If ctx ends while Start is running, a server it may have started is
// stopped again. Once Start returns, ctx no longer matters: call Stop.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Dir == "" {
		return nil, errors.New("pgcluster: Options.Dir is empty")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	run, err := newRunner()
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	dir, err := prepareDir(ctx, run, opts.Dir, log)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	c := &Cluster{
		dir:     dir,
		dataDir: filepath.Join(dir, "data"),
		logPath: filepath.Join(dir, "postgres.log"),
		run:     run,
		log:     log,
		lock:    lock,
		preload: opts.Preload,

		socketOnly: opts.SocketOnly,
	}
	if err := c.init(ctx, opts.Fast); err != nil {
		return nil, errors.Join(fmt.Errorf("pgcluster: %w", err), c.removeTempSockDir(), lock.Close())
	}
	if err := c.start(ctx, opts.Fast); err != nil {
		return nil, errors.Join(fmt.Errorf("pgcluster: %w", err), c.removeTempSockDir(), lock.Close())
	}
	log.Info("postgres started", "dir", c.dir, "port", c.Port(), "socket_dir", c.sockDir, "pid", c.pid)
	return c, nil
}

// init picks the binaries and makes sure the data directory is an
// initialised cluster with no server from an earlier run still using it.
func (c *Cluster) init(ctx context.Context, fast bool) error {
	major, err := dataVersion(c.dataDir)
	if err != nil {
		return err
	}
	c.bins, err = findBinaries(ctx, major)
	if err != nil {
		return err
	}
	if major == "" {
		c.log.Info("initialising postgres cluster", "dir", c.dataDir, "initdb", c.bins.initdb)
		if err := initdb(ctx, c.run, c.bins, c.dataDir, fast); err != nil {
			return err
		}
	} else if err := c.stopLeftover(ctx); err != nil {
		return err
	}
	if err := c.prepareSockDir(ctx); err != nil {
		return err
	}
	return c.run.ensureFile(c.logPath)
}

// start runs pg_ctl start, retrying on a fresh port if another process took
// the probed one before the server could bind it.
func (c *Cluster) start(ctx context.Context, fast bool) error {
	for attempt := 1; ; attempt++ {
		port := socketPort // no TCP: the number only names the socket file
		if !c.socketOnly {
			var err error
			if port, err = freePort(); err != nil {
				return err
			}
		}
		logStart := fileSize(c.logPath)
		out, err := c.run.output(ctx, c.bins.pgCtl, "start", "-w",
			"-t", strconv.Itoa(int(startTimeout/time.Second)),
			"-D", c.dataDir, "-l", c.logPath,
			"-o", serverOptions(port, c.sockDir, c.socketOnly, fast, c.installedLibraries()))
		if err == nil {
			c.port = port
			if c.pid, err = postmasterPID(c.dataDir); err != nil {
				return errors.Join(fmt.Errorf("pg_ctl start: server started but %w", err), c.kill())
			}
			return nil
		}
		tail := logTail(c.logPath, logStart)
		// pg_ctl may give up (timeout, ctx) on a server that is still coming
		// up; never leave one behind that nobody will stop.
		killErr := c.kill()
		if ctx.Err() != nil {
			return errors.Join(fmt.Errorf("pg_ctl start: %w", ctx.Err()), killErr)
		}
		if attempt < startAttempts && !c.socketOnly && strings.Contains(tail, "could not bind") {
			c.log.Info("postgres port taken, retrying", "port", port)
			continue
		}
		return errors.Join(fmt.Errorf("pg_ctl start: %w\n%s\nserver log (%s):\n%s",
			err, strings.TrimSpace(out), c.logPath, tail), killErr)
	}
}

// serverOptions is the -o argument of pg_ctl start. pg_ctl pastes it into a
// /bin/sh command line, hence the quoting.
func serverOptions(port int, sockDir string, socketOnly, fast bool, preload []string) string {
	listen := "127.0.0.1"
	if socketOnly {
		listen = ""
	}
	opts := []string{
		"-c listen_addresses=" + shellQuote(listen),
		"-p " + strconv.Itoa(port),
		"-k " + shellQuote(sockDir),
		"-c max_connections=300",
		"-c shared_buffers=128MB",
		"-c max_locks_per_transaction=256",
	}
	if socketOnly {
		// The directory (0700) already keeps everyone else out; the
		// socket's own mode says the same should the directory ever be
		// opened up.
		opts = append(opts, "-c unix_socket_permissions=0700")
	}
	if fast {
		// Durability is worthless for test data and costs most of the
		// time of a write-heavy test suite.
		opts = append(opts,
			"-c fsync=off",
			"-c synchronous_commit=off",
			"-c full_page_writes=off")
	}
	if len(preload) > 0 {
		opts = append(opts, "-c shared_preload_libraries="+shellQuote(strings.Join(preload, ",")))
	}
	return strings.Join(opts, " ")
}

// installedLibraries is Options.Preload without the libraries missing from
// the installation's lib directory (next to its bin directory).
func (c *Cluster) installedLibraries() []string {
	bin := c.bins.pgCtl
	if real, err := filepath.EvalSymlinks(bin); err == nil {
		bin = real // /usr/local/bin/pg_ctl → /usr/lib/postgresql/15/bin/pg_ctl
	}
	lib := filepath.Join(filepath.Dir(filepath.Dir(bin)), "lib")
	var out []string
	for _, name := range c.preload {
		if _, err := os.Stat(filepath.Join(lib, name+".so")); err != nil {
			c.log.Info("server library not installed; not preloaded", "library", name, "dir", lib)
			continue
		}
		out = append(out, name)
	}
	return out
}

// URL returns a connection URL for database as the superuser "postgres"
// (the server trusts local connections, so there is no password): over TCP,
// or through the unix socket when Options.SocketOnly was set
// (postgres://postgres@/db?host=/socket/dir&port=5432).
func (c *Cluster) URL(database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User("postgres"),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	if c.socketOnly {
		u.Host = ""
		u.RawQuery = url.Values{"host": {c.sockDir}, "port": {strconv.Itoa(c.port)}, "sslmode": {"disable"}}.Encode()
	}
	return u.String()
}

// Port returns the TCP port the server listens on at 127.0.0.1, or 0 when it
// listens on no TCP address (Options.SocketOnly).
func (c *Cluster) Port() int {
	if c.socketOnly {
		return 0
	}
	return c.port
}

// SocketDir returns the directory of the server's unix socket, or "" when
// the socket is disabled (a TCP cluster whose Dir/sock path is too long).
func (c *Cluster) SocketDir() string { return c.sockDir }

// Dir returns the directory the cluster actually lives in: Options.Dir, or
// the fallback under os.TempDir() when the postgres user cannot reach
// Options.Dir.
func (c *Cluster) Dir() string { return c.dir }

// Stop shuts the server down (fast mode: open transactions are rolled back)
// and waits for it to exit. Calling it again, or after the server was
// stopped by other means, returns nil. It never stops a server that a later
// Start on the same directory started in the meantime.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	pid, err := postmasterPID(c.dataDir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && pid != c.pid) {
		// Stopped already, or the server is not ours (which the lock
		// should prevent, but someone may have used pg_ctl by hand).
		c.stopped = true
		return errors.Join(c.removeTempSockDir(), c.unlock())
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout+30*time.Second)
	defer cancel()
	if err := c.pgCtlStop(ctx, "fast"); err != nil {
		return err
	}
	c.stopped = true
	c.log.Info("postgres stopped", "dir", c.dir)
	return errors.Join(c.removeTempSockDir(), c.unlock())
}

func (c *Cluster) unlock() error {
	if err := c.lock.Close(); err != nil {
		return fmt.Errorf("pgcluster: release lock: %w", err)
	}
	return nil
}

// pgCtlStop runs pg_ctl stop in the given mode. A server that turns out not
// to be running counts as stopped.
func (c *Cluster) pgCtlStop(ctx context.Context, mode string) error {
	out, err := c.run.output(ctx, c.bins.pgCtl, "stop", "-w",
		"-t", strconv.Itoa(int(stopTimeout/time.Second)),
		"-D", c.dataDir, "-m", mode)
	if err == nil || !c.running() {
		return nil
	}
	return fmt.Errorf("pg_ctl stop -m %s: %w\n%s\nserver log (%s):\n%s",
		mode, err, strings.TrimSpace(out), c.logPath, logTail(c.logPath, 0))
}

// kill stops a server that Start gave up on, without waiting for clean
// shutdown (it has no data anyone depends on yet).
func (c *Cluster) kill() error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout+30*time.Second)
	defer cancel()
	if !c.running() {
		return nil
	}
	return c.pgCtlStop(ctx, "immediate")
}
