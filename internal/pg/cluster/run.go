package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runner runs PostgreSQL programs, and owns the files they write, as the OS
// user the server runs as: "postgres" when this process is root (PostgreSQL
// refuses to run as root), otherwise the current user.
type runner struct {
	cred *syscall.Credential // nil: run as the current user
	uid  int                 // owner for files handed to the server; -1 for the current user
	gid  int
}

func newRunner() (runner, error) {
	if os.Geteuid() != 0 {
		return runner{uid: -1, gid: -1}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return runner{}, fmt.Errorf("running as root needs a %q OS user to run PostgreSQL as: %w", "postgres", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return runner{}, fmt.Errorf("postgres user: uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return runner{}, fmt.Errorf("postgres user: gid %q: %w", u.Gid, err)
	}
	// Without an explicit list the child would keep root's supplementary
	// groups, which would make the access check below lie.
	groups := []uint32{uint32(gid)}
	if ids, err := u.GroupIds(); err == nil {
		for _, id := range ids {
			if g, err := strconv.ParseUint(id, 10, 32); err == nil && uint32(g) != uint32(gid) {
				groups = append(groups, uint32(g))
			}
		}
	}
	return runner{
		cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups},
		uid:  int(uid),
		gid:  int(gid),
	}, nil
}

// command prepares name to run as the server's user.
func (r runner) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	// Our working directory may be one the postgres user cannot enter, and
	// PostgreSQL programs fail or complain when they cannot.
	cmd.Dir = "/"
	cmd.Env = childEnv(os.Environ())
	// pg_ctl start leaves a server behind; should it ever keep our output
	// pipe open, fail instead of hanging.
	cmd.WaitDelay = 5 * time.Second
	if r.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.cred}
	}
	return cmd
}

// output runs name and returns its combined stdout and stderr.
func (r runner) output(ctx context.Context, name string, args ...string) (string, error) {
	cmd := r.command(ctx, name, args...)
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	err := cmd.Run()
	return buf.String(), err
}

// childEnv drops the PG* variables: they usually describe some other server
// (the caller's DATABASE_URL world) and would override our choices in
// PostgreSQL's programs.
func childEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "PG")
	})
}

// canEnter reports whether the server's user can enter dir, which takes
// search permission on dir and on every directory above it. It asks the
// kernel by trying, so ACLs and the like are honoured.
func (r runner) canEnter(ctx context.Context, dir string) (bool, error) {
	if r.cred == nil {
		return true, nil
	}
	err := r.command(ctx, "/bin/sh", "-c", `cd -- "$1"`, "sh", dir).Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exit):
		return false, nil
	default:
		return false, fmt.Errorf("check access to %s as postgres: %w", dir, err)
	}
}

// ensureDir makes dir a 0700 directory owned by the server's user.
func (r runner) ensureDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := os.Lchown(dir, r.uid, r.gid); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// ensureFile makes path an existing file owned by the server's user, so the
// server can append to it even where it cannot create files.
func (r runner) ensureFile(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Lchown(path, r.uid, r.gid)
}

// binaries are the PostgreSQL programs Start runs. Both find the matching
// postgres executable next to themselves.
type binaries struct {
	initdb string
	pgCtl  string
}

// candidateBinaries lists the installed PostgreSQL versions in order of
// preference: PATH first, then /usr/lib/postgresql/*/bin (Debian's layout),
// highest version first.
func candidateBinaries() []binaries {
	var cs []binaries
	initdbPath, err1 := exec.LookPath("initdb")
	pgCtlPath, err2 := exec.LookPath("pg_ctl")
	if err1 == nil && err2 == nil {
		cs = append(cs, binaries{initdb: initdbPath, pgCtl: pgCtlPath})
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		return compareVersions(filepath.Base(filepath.Dir(b)), filepath.Base(filepath.Dir(a)))
	})
	for _, dir := range dirs {
		b := binaries{initdb: filepath.Join(dir, "initdb"), pgCtl: filepath.Join(dir, "pg_ctl")}
		if isFile(b.initdb) && isFile(b.pgCtl) {
			cs = append(cs, b)
		}
	}
	return cs
}

// findBinaries picks the binaries to use. For an existing cluster (major is
// its PG_VERSION) they must be of the same major version, since a data
// directory only works with the version that created it.
func findBinaries(ctx context.Context, major string) (binaries, error) {
	cs := candidateBinaries()
	if len(cs) == 0 {
		return binaries{}, errors.New("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or under /usr/lib/postgresql/*/bin")
	}
	if major == "" {
		return cs[0], nil
	}
	var found []string
	for _, c := range cs {
		v, err := binaryMajor(ctx, c.pgCtl)
		if err != nil {
			found = append(found, fmt.Sprintf("%s (%v)", c.pgCtl, err))
			continue
		}
		if v == major {
			return c, nil
		}
		found = append(found, fmt.Sprintf("%s (version %s)", c.pgCtl, v))
	}
	return binaries{}, fmt.Errorf("data directory was initialised by PostgreSQL %s, but found only: %s",
		major, strings.Join(found, ", "))
}

// binaryMajor returns the major version of pg_ctl in the form PG_VERSION
// uses: "15" from "pg_ctl (PostgreSQL) 15.13 (Debian 15.13-0+deb12u1)", and
// "9.6" for versions before 10.
func binaryMajor(ctx context.Context, pgCtl string) (string, error) {
	out, err := exec.CommandContext(ctx, pgCtl, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", pgCtl, err)
	}
	_, rest, ok := strings.Cut(string(out), "(PostgreSQL) ")
	fields := strings.Fields(rest)
	if !ok || len(fields) == 0 {
		return "", fmt.Errorf("%s --version: unexpected output %q", pgCtl, out)
	}
	parts := strings.Split(leadingVersion(fields[0]), ".")
	if n, err := strconv.Atoi(parts[0]); err == nil && n < 10 && len(parts) > 1 {
		return parts[0] + "." + parts[1], nil
	}
	return parts[0], nil
}

// leadingVersion strips a suffix such as "beta1" from a version string.
func leadingVersion(s string) string {
	end := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end < 0 {
		return s
	}
	return s[:end]
}

// compareVersions compares dotted version strings numerically ("9.6" < "15").
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var na, nb int
		if i < len(pa) {
			na, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			nb, _ = strconv.Atoi(pb[i])
		}
		if na != nb {
			return na - nb
		}
	}
	return 0
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// processAlive reports whether pid is a live postgres process. Unlike
// kill(pid, 0) it says no for a zombie and for a pid that was reused by an
// unrelated program after a crash or reboot, so that a stale
// postmaster.pid is never taken for a running server (and the unrelated
// process is never signalled). Where /proc is missing it falls back to
// kill(pid, 0).
func processAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, fs.ErrNotExist) {
		if _, statErr := os.Stat("/proc/self/stat"); statErr == nil {
			return false // procfs works; the process is gone
		}
	}
	if err != nil {
		err := syscall.Kill(pid, 0)
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	// Format: "pid (comm) state ...", where comm may itself contain ')'.
	s := string(stat)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open || closing+2 >= len(s) {
		return false
	}
	comm, state := s[open+1:closing], s[closing+2]
	return comm == "postgres" && state != 'Z' && state != 'X'
}
