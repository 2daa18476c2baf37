package agent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/wire"
)

// The findings of the isolation review that are the daemon's own, each
// with the test that fails on the sandbox it replaced.

// A stale pid never stops another tenant's processes: an instance whose
// process is gone (reaped, or its pid now another process's) is stopped
// without a signal to whatever group now has that id.
func TestStaleInstancePIDSignalsNobody(t *testing.T) {
	victim := exec.Command("sleep", "600")
	victim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group leader: another tenant's workload
	require.NoError(t, victim.Start())
	t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })
	ticks, ok := processStart(victim.Process.Pid)
	require.True(t, ok)

	// Recorded with another start time: the pid was reused.
	reused := &instanceProcess{id: "ins_old", pid: victim.Process.Pid, startTicks: ticks + 1, done: make(chan struct{})}
	go watchAdopted(reused)
	stopGroup(reused, 50*time.Millisecond)
	// Its own process exited and was reaped: done is closed.
	exited := &instanceProcess{id: "ins_exited", pid: victim.Process.Pid, startTicks: ticks, done: make(chan struct{})}
	close(exited.done)
	stopGroup(exited, 50*time.Millisecond)

	require.True(t, alive(victim.Process.Pid), "the other tenant's process runs on")
}

// The daemon never follows a link a tenant planted: a directory it makes
// where a link stands is refused, and the link's target is untouched.
func TestDaemonNeverFollowsATenantsLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "etc-like")
	require.NoError(t, os.Mkdir(target, 0o755))
	require.NoError(t, os.Symlink(target, filepath.Join(dir, "mps")))
	err := mkdirNoFollow(filepath.Join(dir, "mps"), 0o700, 4242)
	require.Error(t, err)
	st, err := os.Stat(target)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), st.Mode().Perm(), "not chmodded through the link")
	require.Equal(t, uint32(os.Geteuid()), st.Sys().(*syscall.Stat_t).Uid, "not chowned through the link")
	// A real directory is made, owned and moded.
	require.NoError(t, mkdirNoFollow(filepath.Join(dir, "real"), 0o700, 0))
	st, err = os.Lstat(filepath.Join(dir, "real"))
	require.NoError(t, err)
	require.True(t, st.IsDir())
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())
}

// A workload root another user could have made or can write into is
// refused: a local user who pre-creates it (as one could under /tmp)
// would redirect the root daemon's writes.
func TestWorkloadRootMustBeRootsAlone(t *testing.T) {
	testenv.Require(t, os.Geteuid() == 0, "needs root to make directories of other users")
	base := t.TempDir() // root's, 0700
	require.NoError(t, secureDir(filepath.Join(base, "ok", "workloads")))

	squatted := filepath.Join(base, "squatted")
	require.NoError(t, os.Mkdir(squatted, 0o755))
	require.NoError(t, os.Chown(squatted, 1234, 1234))
	err := secureDir(squatted)
	require.ErrorContains(t, err, "belongs to user 1234")

	open := filepath.Join(base, "open")
	require.NoError(t, os.Mkdir(open, 0o777))
	require.NoError(t, os.Chmod(open, 0o777))
	require.ErrorContains(t, secureDir(filepath.Join(open, "workloads")), "can be written by other users")

	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(filepath.Join(base, "ok"), link))
	require.ErrorContains(t, secureDir(link), "symbolic link")
}

// However much a job prints, the daemon keeps its last maxOutput bytes
// and never holds more than twice that.
func TestExecOutputIsABoundedTail(t *testing.T) {
	out := &tailBuffer{max: maxOutput}
	chunk := []byte(strings.Repeat("x", 4096))
	for i := 0; i < 25_000; i++ { // 100 MiB
		_, _ = out.Write(chunk)
		require.LessOrEqual(t, cap(out.buf), 4*maxOutput)
	}
	_, _ = out.Write([]byte("the end\n"))
	s := out.String()
	require.Len(t, s, maxOutput)
	require.True(t, strings.HasSuffix(s, "xthe end\n"))
}

// A daemon that cannot isolate says why, and refuses workloads with that
// reason instead of running them unconfined: no runc, a cgroup
// controller missing, GPUs without a CDI spec.
func TestDaemonThatCannotIsolateRefuses(t *testing.T) {
	testenv.Require(t, os.Geteuid() == 0, "the checks after root's need root")
	testenv.Program(t, "runc", "", "runc")
	gpus := []wire.InventoryGPU{{UUID: "GPU-real-0", Model: "H100-80GB", MemoryMB: 81920}}
	base := func(t *testing.T) Config {
		root, err := os.MkdirTemp("", "compute-refuse-")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(root) })
		return Config{NodeID: "refuse", StateDir: t.TempDir(), WorkloadDir: root, CDISpecDirs: []string{t.TempDir()},
			UIDTable: filepath.Join(t.TempDir(), "uids.json"), FakeGPUs: "1xH100-80GB"}
	}
	for name, tc := range map[string]struct {
		edit func(*Config)
		gpus []wire.InventoryGPU
		want string
	}{
		"no runc":          {func(c *Config) { c.RuncPath = "/nonexistent/runc" }, nil, "needs runc"},
		"no cgroups":       {func(c *Config) { c.CgroupRoot = t.TempDir() }, nil, "is not mounted"},
		"no CDI spec":      {func(c *Config) { c.FakeGPUs = "" }, gpus, "no CDI device for GPU-real-0"},
		"squatted root":    {func(c *Config) { c.WorkloadDir = "/tmp" }, nil, "shared sticky directory"},
		"fake GPUs are ok": {func(c *Config) {}, nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := base(t)
			tc.edit(&cfg)
			g := tc.gpus
			if cfg.FakeGPUs != "" {
				var err error
				g, err = inventoryGPUs(context.Background(), cfg.NodeID, cfg.FakeGPUs)
				require.NoError(t, err)
			}
			sb, err := openSandbox(context.Background(), cfg, g)
			require.NoError(t, err, "the daemon runs on (its node stays reachable)")
			if tc.want == "" {
				require.NoError(t, sb.check())
				return
			}
			require.ErrorContains(t, sb.check(), tc.want)
			_, err = sb.workload(context.Background(), &wire.AssignPayload{AllocationID: "alc_x"}, "true", ".")
			require.ErrorContains(t, err, "workloads are refused on this node")
			require.ErrorContains(t, err, tc.want)
		})
	}
}
