package cluster

import (
	"bufio"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// traversableDir is a fresh directory the postgres OS user can enter (not
// t.TempDir, whose parent is private to root), removed at the end.
func traversableDir(t *testing.T, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(dir)) })
	require.NoError(t, os.Chmod(dir, 0o755))
	return dir
}

// serverUID is the user the server runs as: postgres when the test is root.
func serverUID(t *testing.T) uint32 {
	t.Helper()
	if os.Geteuid() != 0 {
		return uint32(os.Geteuid())
	}
	u, err := user.Lookup("postgres")
	require.NoError(t, err)
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	require.NoError(t, err)
	return uint32(uid)
}

// tcpListeners returns the local ports of the listening TCP sockets (IPv4
// and IPv6) that process pid holds open, read from /proc.
func tcpListeners(t *testing.T, pid int) []int {
	t.Helper()
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	require.NoError(t, err)
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if os.IsNotExist(err) {
			continue // no IPv6
		}
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] { // 0A: LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			port, err := strconv.ParseUint(hexPort, 16, 16)
			require.NoError(t, err)
			ports = append(ports, int(port))
		}
		require.NoError(t, sc.Err())
		require.NoError(t, f.Close())
	}
	return ports
}

func setting(t *testing.T, c *Cluster, name string) string {
	t.Helper()
	var v string
	require.NoError(t, connect(t, c).QueryRow(t.Context(), "SELECT current_setting($1)", name).Scan(&v))
	return v
}

// A SocketOnly cluster (compute serve's private one) listens on no TCP
// address: its postmaster holds no listening TCP socket, where a default
// cluster holds one on its port; it is reached through a unix socket in a
// directory of mode 0700 owned by the server's user, whose URL connects;
// and it comes back on the same directory after a clean stop and after a
// crash that left its socket and socket lock behind.
func TestSocketOnly(t *testing.T) {
	t.Parallel()
	// The check that finds no listener finds the default cluster's.
	tcp := startCluster(t, traversableDir(t, "pgcluster-tcp-"))
	require.Equal(t, []int{tcp.Port()}, tcpListeners(t, tcp.pid))
	require.Equal(t, "127.0.0.1", setting(t, tcp, "listen_addresses"))

	dir := traversableDir(t, "pgcluster-sock-")
	opts := testOptions(t, dir)
	opts.SocketOnly = true
	start := func() *Cluster {
		c, err := Start(t.Context(), opts)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, c.Stop()) })
		return c
	}
	c := start()
	require.Empty(t, tcpListeners(t, c.pid))
	require.Equal(t, "", setting(t, c, "listen_addresses"))
	require.Equal(t, "0700", setting(t, c, "unix_socket_permissions"))
	require.Zero(t, c.Port())

	sockDir := filepath.Join(dir, "sock")
	require.Equal(t, sockDir, c.SocketDir())
	fi, err := os.Stat(sockDir)
	require.NoError(t, err)
	require.True(t, fi.IsDir())
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	require.Equal(t, serverUID(t), fi.Sys().(*syscall.Stat_t).Uid)
	require.FileExists(t, filepath.Join(sockDir, ".s.PGSQL.5432"))
	u, err := url.Parse(c.URL("app"))
	require.NoError(t, err)
	require.Empty(t, u.Host, "no TCP address in the URL")
	require.Equal(t, sockDir, u.Query().Get("host"))
	var addr *string
	require.NoError(t, connect(t, c).QueryRow(t.Context(), "SELECT inet_server_addr()::text").Scan(&addr))
	require.Nil(t, addr, "the connection is not over TCP")

	// A clean restart, then a crash that leaves the socket files behind.
	require.NoError(t, c.Stop())
	c = start()
	require.Equal(t, "", setting(t, c, "listen_addresses"))
	require.NoError(t, syscall.Kill(-c.pid, syscall.SIGKILL))
	abandon(t, c)
	require.Eventually(t, func() bool { return !groupAlive(t, c.pid) }, 30*time.Second, 10*time.Millisecond)
	require.FileExists(t, filepath.Join(sockDir, ".s.PGSQL.5432.lock"))
	c = start()
	require.Empty(t, tcpListeners(t, c.pid))
	require.Equal(t, "", setting(t, c, "listen_addresses"))
}

// A SocketOnly cluster whose Dir/sock would be too long for a unix socket
// gets a short private directory (0700, the server's user's) under the
// system temporary directory instead, and Stop removes it.
func TestSocketOnlyLongDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(traversableDir(t, "pgcluster-long-"), strings.Repeat("d", maxSockDirLen))
	opts := testOptions(t, dir)
	opts.SocketOnly = true
	c, err := Start(t.Context(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Stop()) })

	sockDir := c.SocketDir()
	require.NotEqual(t, filepath.Join(dir, "sock"), sockDir)
	require.LessOrEqual(t, len(sockDir), maxSockDirLen)
	fi, err := os.Stat(sockDir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	require.Equal(t, serverUID(t), fi.Sys().(*syscall.Stat_t).Uid)
	require.Empty(t, tcpListeners(t, c.pid))
	require.Equal(t, "", setting(t, c, "listen_addresses"))

	require.NoError(t, c.Stop())
	require.NoDirExists(t, sockDir)
}
