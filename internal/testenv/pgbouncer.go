package testenv

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// pgbouncerINI puts PgBouncer in transaction pooling mode in front of a
// PostgreSQL server on loopback. Every database name is routed (pgtest's
// per-test databases need no entry of their own). PgBouncer refuses startup
// parameters it does not know, so the service's
// idle_in_transaction_session_timeout is dropped at the door and set again
// on every server connection with connect_query: without it a transaction
// left open would hold the outbox frontier back unbounded.
const pgbouncerINI = `[databases]
* = host=127.0.0.1 port=%d connect_query='SET idle_in_transaction_session_timeout = 30000'

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 500
default_pool_size = 40
ignore_startup_parameters = extra_float_digits,idle_in_transaction_session_timeout
logfile = %s
pidfile = %s
admin_users = postgres
`

// pgbouncerStartTimeout bounds the wait for PgBouncer to accept connections.
const pgbouncerStartTimeout = 10 * time.Second

// StartPgBouncer runs PgBouncer (installed when missing and possible; see
// Program) on a free loopback port in front of the server at pgPort, and
// returns directURL with its host replaced by PgBouncer's: the same
// database, through transaction pooling. PgBouncer refuses to run as root,
// so as root it runs as the postgres user, from a directory that user owns.
// It is stopped when the test ends, its log tail printed if the test failed.
func StartPgBouncer(t testing.TB, pgPort int, directURL string) string {
	t.Helper()
	bin := Program(t, "pgbouncer", "", "pgbouncer")
	// Not t.TempDir: its parents are root's and closed to the postgres user.
	dir, err := os.MkdirTemp("", "compute-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		Require(t, err == nil, "running as root and there is no postgres user to run pgbouncer as: %v", err)
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	userlist := filepath.Join(dir, "userlist.txt")
	if err := os.WriteFile(userlist, []byte(`"postgres" ""`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ini := filepath.Join(dir, "pgbouncer.ini")
	logPath := filepath.Join(dir, "pgbouncer.log")
	conf := fmt.Sprintf(pgbouncerINI, pgPort, port, userlist, logPath, filepath.Join(dir, "pgbouncer.pid"))
	if err := os.WriteFile(ini, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, ini)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	logTail := func() string {
		b, err := os.ReadFile(logPath)
		if err != nil {
			return err.Error()
		}
		return string(b[max(0, len(b)-3000):])
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		if t.Failed() {
			t.Logf("pgbouncer log tail:\n%s", logTail())
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(pgbouncerStartTimeout)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("pgbouncer exited:\n%s", logTail())
		case <-deadline:
			t.Fatalf("pgbouncer did not accept connections on %s within %s:\n%s", addr, pgbouncerStartTimeout, logTail())
		case <-tick.C:
		}
	}
	u, err := url.Parse(directURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = addr
	return u.String()
}
