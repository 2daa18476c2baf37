package agent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/wire"
)

// keeperRun is a keeper program (keeperProgram) run under one of the
// node's shells outside any container, with its deadlines in dir, its boot
// clock in the file uptime and a wall clock of its own: a `date` first in
// its PATH that prints what the file wall holds, so that a test steps the
// wall clock of the keeper alone.
type keeperRun struct {
	dir, uptime, wall string
	cmd               *exec.Cmd
	done              chan struct{}
}

// startKeeper starts the keeper whose command line args makes, on the
// deadlines in dir ("": a directory of its own), with the boot clock at
// uptime and the wall clock at wall, both in seconds.
func startKeeper(t *testing.T, args func(dir, uptime string) []string, dir, uptime string, wall int64) *keeperRun {
	t.Helper()
	tmp := t.TempDir()
	k := &keeperRun{dir: dir, uptime: filepath.Join(tmp, "uptime"), wall: filepath.Join(tmp, "wall"),
		done: make(chan struct{})}
	if dir == "" {
		k.dir = filepath.Join(tmp, "keeper")
		require.NoError(t, os.Mkdir(k.dir, 0o755))
	}
	bin := filepath.Join(tmp, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "date"), []byte("#!/bin/sh\nexec cat "+k.wall+"\n"), 0o755))
	k.setUptime(t, uptime)
	k.setWall(t, wall)
	argv := args(k.dir, k.uptime)
	k.cmd = exec.Command(argv[0], argv[1:]...)
	k.cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
	require.NoError(t, k.cmd.Start())
	go func() { _ = k.cmd.Wait(); close(k.done) }()
	t.Cleanup(func() {
		_ = k.cmd.Process.Kill()
		<-k.done
	})
	return k
}

// replaceFile replaces path with content at once, as the daemon does: the
// keeper never reads half a number.
func replaceFile(t *testing.T, path, content string) {
	require.NoError(t, os.WriteFile(path+".new", []byte(content), 0o644))
	require.NoError(t, os.Rename(path+".new", path))
}

func (k *keeperRun) setUptime(t *testing.T, s string) { replaceFile(t, k.uptime, s+" 12.34\n") }

func (k *keeperRun) setWall(t *testing.T, unix int64) {
	replaceFile(t, k.wall, strconv.FormatInt(unix, 10)+"\n")
}

func (k *keeperRun) write(t *testing.T, name, content string) {
	replaceFile(t, filepath.Join(k.dir, name), content)
}

func (k *keeperRun) exited() bool {
	select {
	case <-k.done:
		return true
	default:
		return false
	}
}

// testKeeperPoll is the keeper's poll in these tests.
const testKeeperPoll = 50 * time.Millisecond

// testKeeper is the keeper's command line under sh for these tests.
func testKeeper(sh keeperShell) func(dir, uptime string) []string {
	return func(dir, uptime string) []string { return keeperArgs(sh, dir, uptime, testKeeperPoll) }
}

// eachKeeperShell runs test once for each shell a keeper can run under,
// as a subtest named after it.
func eachKeeperShell(t *testing.T, test func(t *testing.T, sh keeperShell)) {
	for _, sh := range []keeperShell{keeperSh, keeperBash} {
		t.Run(filepath.Base(string(sh)), func(t *testing.T) {
			t.Parallel()
			testenv.Program(t, filepath.Base(string(sh)), string(sh), filepath.Base(string(sh)))
			test(t, sh)
		})
	}
}

// keepsRunning says that the keeper is still running after many polls.
func (k *keeperRun) keepsRunning(t *testing.T, why string) {
	t.Helper()
	require.Never(t, k.exited, time.Second, 20*time.Millisecond, why)
}

// ends says that the keeper exits, with status 0, within a few polls.
func (k *keeperRun) ends(t *testing.T, why string) {
	t.Helper()
	require.Eventually(t, k.exited, 10*time.Second, 10*time.Millisecond, why)
	require.Zero(t, k.cmd.ProcessState.ExitCode())
}

// A keeper ends its container when the node's boot clock reaches its
// deadline, and the node's wall clock has nothing to say about it: stepped
// a century forward (an NTP step, `date -s`) before its deadline, the
// keeper runs on; stepped back to 1970, it still ends at its deadline.
// Before, the deadline was Unix seconds compared with `date +%s`: the step
// forward ended the workload at once, before its window's end, and the step
// back kept it running past it.
func TestKeeperIgnoresTheWallClock(t *testing.T) {
	t.Parallel()
	eachKeeperShell(t, func(t *testing.T, sh keeperShell) {
		k := startKeeper(t, testKeeper(sh), "", "999.99", time.Now().Unix())
		k.write(t, keeperBootDeadline, "1000 0d1e5b9a-2c1f-4a43-9d0e-6f7b3c2a1e55")
		k.setWall(t, time.Date(2126, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
		k.keepsRunning(t, "a step of the wall clock forward ended the keeper before its deadline")
		k.setWall(t, 0)
		k.setUptime(t, "1000.00")
		k.ends(t, "the keeper did not end at its deadline with the wall clock stepped back")
	})
}

// A keeper whose deadline or clock it cannot read (none yet, not a
// number, an assignment without an end: empty) has no deadline, and one
// whose deadline is moved later before it is reached runs on to the new one.
func TestKeeperDeadlineUnreadableOrMoved(t *testing.T) {
	t.Parallel()
	eachKeeperShell(t, func(t *testing.T, sh keeperShell) {
		k := startKeeper(t, testKeeper(sh), "", "5000.00", 0)
		k.keepsRunning(t, "a keeper without a deadline ended")
		k.write(t, keeperBootDeadline, "")
		k.keepsRunning(t, "an empty deadline ended the keeper")
		k.write(t, keeperBootDeadline, "12x")
		k.keepsRunning(t, "a deadline that is no number ended the keeper")
		k.write(t, keeperBootDeadline, "6000")
		k.setUptime(t, "")
		k.keepsRunning(t, "an unreadable boot clock ended the keeper")
		k.setUptime(t, "5999.99")
		k.keepsRunning(t, "the keeper ended before its deadline")
		k.write(t, keeperBootDeadline, "7000") // an extension
		k.setUptime(t, "6000.00")
		k.keepsRunning(t, "the keeper ended at the deadline its extension moved")
		k.setUptime(t, "7000.50")
		k.ends(t, "the keeper did not end at its moved deadline")
	})
}

// A keeper of this release on a node downgraded to an earlier daemon: that
// daemon moves only the Unix-seconds file when the window is extended, so
// the keeper, past its boot deadline, waits for that one too and never
// ends an extended window at its former end. Under keeperSh it reads the
// wall clock with `date`, stepped here; under keeperBash with the shell's
// own printf, the node's clock, whatever `date` says.
func TestKeeperHonoursAnEarlierDaemonsDeadline(t *testing.T) {
	t.Parallel()
	t.Run("sh", func(t *testing.T) {
		t.Parallel()
		k := startKeeper(t, testKeeper(keeperSh), "", "1000.00", 1_800_000_000)
		k.write(t, keeperBootDeadline, "1000")
		k.write(t, keeperWallDeadline, "1800003600")
		k.keepsRunning(t, "the keeper ended at its boot deadline though an earlier daemon moved its Unix one later")
		k.setWall(t, 1_800_003_600)
		k.ends(t, "the keeper did not end once both deadlines had passed")
	})
	t.Run("bash", func(t *testing.T) {
		t.Parallel()
		testenv.Program(t, "bash", string(keeperBash), "bash")
		// `date` says a century later: a keeper that asked it would end at once.
		k := startKeeper(t, testKeeper(keeperBash), "", "1000.00", time.Date(2126, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
		k.write(t, keeperBootDeadline, "1000")
		wall := time.Now().Add(3 * time.Second)
		k.write(t, keeperWallDeadline, strconv.FormatInt(wall.Unix()+1, 10))
		k.keepsRunning(t, "the keeper ended at its boot deadline though an earlier daemon moved its Unix one later")
		k.ends(t, "the keeper did not end once both deadlines had passed")
		require.False(t, time.Now().Before(wall), "the keeper ended before its Unix deadline")
	})
}

// previousKeeperProgram is the keeper program of the release before the
// boot clock's (Unix seconds in keeperWallDeadline, against `date +%s`):
// the one that runs in the containers that release's daemon started, and
// goes on running in them after the daemon is upgraded.
func previousKeeperProgram(dir, _ string) []string {
	return []string{"/bin/sh", "-c", "trap '' TERM; while :; do " +
		"d=$(cat " + dir + "/deadline 2>/dev/null); " +
		`case "$d" in ''|*[!0-9]*) ;; *) [ "$(date +%s)" -lt "$d" ] || exit 0;; esac; ` +
		"sleep 0.05 & wait; done"}
}

// The daemon writes the boot-clock second at which what is left of the
// window, the stop grace and keeperSlack are over, rounded up, from the
// control plane's time as it reckons it and the node's boot clock: the
// node's wall clock (here months from the control plane's time the test
// gives) plays no part. The node's boot id follows. It never makes the
// earlier release's file.
func TestKeeperDeadlineWritten(t *testing.T) {
	t.Parallel()
	cp := time.Date(2027, 6, 1, 12, 0, 0, 0, time.UTC) // the control plane's time, as the daemon reckons it
	boot := 1000*time.Second + 200*time.Millisecond
	s := &sandbox{mode: IsolationContainer, root: t.TempDir(), cfg: Config{StopGrace: 10 * time.Second},
		windowNow: func() time.Time { return cp }, bootNow: func() time.Duration { return boot }}
	grace := s.cfg.StopGrace + keeperSlack
	b, err := os.ReadFile(bootIDFile)
	require.NoError(t, err)
	bootID := strings.TrimSpace(string(b))
	for _, c := range []struct {
		name string
		end  time.Time
		want string
	}{
		{"a window ending in an hour", cp.Add(time.Hour), fmt.Sprint(1000 + 3600 + 70 + 1)}, // 4670.2 rounded up
		{"on a whole second", cp.Add(time.Hour - 200*time.Millisecond), "4670"},
		{"ended a minute ago", cp.Add(-time.Minute), fmt.Sprint(1000 + 10 + 1)},
		{"ended before the node booted", cp.Add(-time.Hour), "0"},
		{"no end", time.Time{}, ""},
	} {
		a := &wire.AssignPayload{AllocationID: "alc_" + strings.ReplaceAll(c.name, " ", ""), End: c.end}
		require.NoError(t, os.Mkdir(s.domainDir(a.AllocationID), 0o700))
		require.NoError(t, s.writeKeeperDeadline(a, a.AllocationID), c.name)
		dir := s.keeperHostDir(a.AllocationID)
		b, err := os.ReadFile(filepath.Join(dir, keeperBootDeadline))
		require.NoError(t, err, c.name)
		secs, id, _ := strings.Cut(string(b), " ")
		require.Equal(t, c.want, secs, c.name)
		if c.want != "" {
			require.Equal(t, bootID, id, "%s: the boot the deadline counts in", c.name)
		}
		require.NoFileExists(t, filepath.Join(dir, keeperWallDeadline), c.name)
		if !c.end.IsZero() {
			n, _ := strconv.ParseInt(secs, 10, 64)
			require.GreaterOrEqual(t, time.Duration(n)*time.Second, max(boot+c.end.Sub(cp)+grace, 0), c.name)
		}
	}
}

// A container an earlier daemon started runs the earlier keeper, which
// reads Unix seconds in keeperWallDeadline. When this release's daemon
// moves its deadline (here: the window extended by an hour), that file
// gets Unix seconds still (a boot-clock number there would be a Unix time
// long past, and would end the workload at once), and the earlier keeper
// ends at the window's new end.
func TestKeeperDeadlineOfAnEarlierReleasesContainer(t *testing.T) {
	t.Parallel()
	s := &sandbox{mode: IsolationContainer, root: t.TempDir(), cfg: Config{StopGrace: 10 * time.Second},
		bootNow: func() time.Duration { return 1000 * time.Second }}
	start := time.Now()
	a := &wire.AssignPayload{AllocationID: "alc_earlier", End: start.Add(30 * time.Second)}
	dir := s.keeperHostDir(a.AllocationID)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	// What the earlier daemon wrote when it started the container.
	former := start.Add(30*time.Second + s.cfg.StopGrace + keeperSlack).Unix()
	require.NoError(t, os.WriteFile(filepath.Join(dir, keeperWallDeadline), []byte(strconv.FormatInt(former+1, 10)), 0o644))
	k := startKeeper(t, previousKeeperProgram, dir, "1000.00", start.Unix())

	a.End = a.End.Add(time.Hour)
	require.NoError(t, s.moveKeeperDeadline(a))
	k.keepsRunning(t, "an earlier release's keeper ended at once after this daemon moved its deadline")
	k.setWall(t, former+2)
	k.keepsRunning(t, "an earlier release's keeper ended at its window's former end")
	k.setWall(t, former+int64(time.Hour/time.Second)+2)
	k.ends(t, "an earlier release's keeper did not end at its window's new end")
}
