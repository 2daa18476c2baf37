package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/internal/workqueue"
)

// A tenant's exec job runs outside the daemon's security domain, in its
// allocation's container: as a user of its allocation's own (not root,
// not another allocation's), unable to read the daemon's credential,
// journal or process environment, with none of the daemon's environment
// (where a join token could be), and unable to enter another allocation's
// directory.
func TestWorkloadsCannotReachTheDaemon(t *testing.T) {
	requireContainers(t)
	t.Parallel()
	hs := newHarness(t)
	hs.isolation = agent.IsolationContainer
	g, url := hs.gateway("gw1")
	router := hs.router(g)
	state := t.TempDir()
	hs.daemon("n1", state, url)
	hs.eventually("n1", core.NodeConnected)
	first := hs.book("n1")
	second := hs.book("n1")
	cred := filepath.Join(state, "credential")
	require.FileExists(t, cred)

	probe := func(key, rsv, script string) core.NodeCommand {
		t.Helper()
		alloc := filepath.Base(filepath.Dir(hs.workDir("n1", rsv)))
		cmd := exec(key, script, false)
		cmd.AllocationID = alloc
		c := hs.run(tenant, cmd)
		require.NoError(t, router.HandleDispatch(hs.ctx, workqueue.Item{Kind: commands.KindNodeJobDispatch, Key: "n1"}))
		require.Eventually(t, func() bool {
			s := hs.command(c.ID).State
			return s == core.CommandSucceeded || s == core.CommandFailed
		}, 10*time.Second, 5*time.Millisecond)
		return hs.command(c.ID)
	}
	// Every probe prints one line per attempt: "ok" would be a leak.
	script := fmt.Sprintf(`id -u
cat %[1]s >/dev/null 2>&1 && echo credential:ok || echo credential:denied
cat %[2]s >/dev/null 2>&1 && echo journal:ok || echo journal:denied
cat /proc/%[3]d/environ >/dev/null 2>&1 && echo environ:ok || echo environ:denied
ls %[4]s >/dev/null 2>&1 && echo other:ok || echo other:denied
env | grep -c -i -e token -e DATABASE_URL || true`,
		cred, filepath.Join(state, "journal.jsonl"), os.Getpid(),
		filepath.Dir(hs.workDir("n1", second)))
	os.Setenv("COMPUTE_JOIN_TOKEN_PROBE", "bc_secret") // the daemon's environment must not reach the job
	defer os.Unsetenv("COMPUTE_JOIN_TOKEN_PROBE")
	hs.workDirReady(t, "n1", second, router) // the other allocation's directory exists

	got := probe("p1", first, script)
	require.Equal(t, core.CommandSucceeded, got.State, got.Output+got.Reason)
	lines := strings.Split(strings.TrimSpace(got.Output), "\n")
	require.Len(t, lines, 6, got.Output)
	uid, err := strconv.Atoi(lines[0])
	require.NoError(t, err)
	require.NotZero(t, uid, "never as root")
	require.Equal(t, []string{"credential:denied", "journal:denied", "environ:denied", "other:denied", "0"}, lines[1:])

	other := probe("p2", second, "id -u")
	require.Equal(t, core.CommandSucceeded, other.State)
	require.NotEqual(t, strconv.Itoa(uid), strings.TrimSpace(other.Output), "two allocations, two users")
}

// requireContainers skips a test that needs container isolation (root and
// runc) where it cannot run; CI installs runc and runs as root.
func requireContainers(t *testing.T) {
	t.Helper()
	testenv.Require(t, os.Geteuid() == 0, "container isolation needs root")
	testenv.Program(t, "runc", "", "runc")
}

// workDirReady runs a no-op job in reservation's allocation so that its
// directory exists on the node.
func (hs *harness) workDirReady(t *testing.T, node, rsv string, router *gateway.NodeJobRouter) {
	t.Helper()
	cmd := exec("ready-"+rsv, "true", false)
	cmd.AllocationID = filepath.Base(filepath.Dir(hs.workDir(node, rsv)))
	c := hs.run(tenant, cmd)
	require.NoError(t, router.HandleDispatch(hs.ctx, workqueue.Item{Kind: commands.KindNodeJobDispatch, Key: node}))
	hs.awaitCommand(c.ID, core.CommandSucceeded)
}

// A tenant runs nothing on a node through a booking whose window has not
// begun, nor without naming which of several active allocations it means;
// and nothing at all on a node where it holds nothing.
func TestExecNeedsAnActiveAllocation(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	_, url := hs.gateway("gw1")
	hs.daemon("n1", t.TempDir(), url)
	hs.eventually("n1", core.NodeConnected)
	h := commands.New(hs.d.Pool, commands.Config{})
	active := hs.book("n1") // quotas, and one active reservation
	now := hs.d.Now(t)
	later, err := h.CreateReservation(hs.ctx, tenant, commands.CreateReservation{PoolID: "metal", GPUs: 1,
		Start: now.Add(7 * 24 * time.Hour), End: now.Add(8 * 24 * time.Hour)})
	require.NoError(t, err)
	require.Equal(t, core.ReservationBooked, later.Reservation.State)

	run := func(key, alloc string) error {
		cmd := exec(key, "true", false)
		cmd.AllocationID = alloc
		_, err := h.RunNodeCommand(hs.ctx, tenant, cmd)
		return err
	}
	future := filepath.Base(filepath.Dir(hs.workDir("n1", later.Reservation.ID)))
	require.Equal(t, core.CodeConflict, core.CodeOf(run("future", future)), "a booking 7 days ahead runs nothing now")
	unnamed, err := h.RunNodeCommand(hs.ctx, tenant, exec("unnamed", "true", false))
	require.NoError(t, err)
	require.Equal(t, filepath.Base(filepath.Dir(hs.workDir("n1", active))), unnamed.Command.AllocationID,
		"unnamed: the allocation that is active now, never the future one")
	hs.book("n1")
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(run("which", "")), "two active allocations: name one")
	require.Equal(t, core.CodeNotFound, core.CodeOf(run("theirs", "alloc_not_mine")))
	globex := core.Actor{Tenant: "globex", Identity: "eve@globex", Role: core.RoleMember}
	_, err = h.RunNodeCommand(hs.ctx, globex, exec("nothing", "true", false))
	require.Equal(t, core.CodeNotFound, core.CodeOf(err), "no allocation on the node: it does not exist for them")
}
