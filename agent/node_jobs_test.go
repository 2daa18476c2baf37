package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/workqueue"
)

var tenant = core.Actor{Tenant: "acme", Identity: "bob@acme", Role: core.RoleMember}

// router registers g as the in-process route of node commands.
func (hs *harness) router(g *gateway.Gateway) *gateway.NodeJobRouter {
	r := &gateway.NodeJobRouter{Commands: hs.s}
	r.Register(g)
	return r
}

// book gives tenant acme an active reservation of one GPU on the only node,
// assigned to its daemon, and returns its id.
func (hs *harness) book(node string) string { return hs.bookFor(node, time.Hour) }

// bookFor is book of a reservation that ends length from now.
func (hs *harness) bookFor(node string, length time.Duration) string {
	h := commands.New(hs.d.Pool, commands.Config{})
	require.NoError(hs.t, hs.d.Q.TenantEnsure(hs.ctx, "acme"))
	for _, r := range []string{"gpu", "vcpu", "memory", "disk"} {
		_, err := h.SetQuota(hs.ctx, operator, commands.SetQuota{Tenant: "acme", Resource: r, Max: 1 << 30})
		require.NoError(hs.t, err)
	}
	now := hs.d.Now(hs.t)
	res, err := h.CreateReservation(hs.ctx, tenant, commands.CreateReservation{PoolID: "metal", GPUs: 1,
		Start: now, End: now.Add(length)})
	require.NoError(hs.t, err)
	require.Equal(hs.t, node, res.Reservation.NodeID)
	// Node jobs run only in an active reservation: its window has begun.
	require.NoError(hs.t, commandstest.Activate(hs.ctx, h, res.Reservation.ID))
	// And only where the allocation is assigned: the booking queued an
	// assign job for the node; dispatch delivers it and the daemon
	// acknowledges it.
	hs.awaitAssigned(res.Reservation.ID)
	return res.Reservation.ID
}

// awaitAssigned dispatches the nodes' jobs until the daemon has
// acknowledged the assign of reservation's allocation.
func (hs *harness) awaitAssigned(reservationID string) {
	hs.t.Helper()
	var state string
	require.Eventually(hs.t, func() bool {
		for _, g := range hs.gateways() {
			_ = g.DispatchPending(hs.ctx)
		}
		err := hs.d.Pool.QueryRow(hs.ctx, `SELECT c.state FROM node_commands c JOIN allocations a ON a.id = c.allocation_id
			WHERE a.reservation_id = $1 AND c.kind = 'assign' ORDER BY c.seq DESC LIMIT 1`, reservationID).Scan(&state)
		return err == nil && state == "succeeded"
	}, 10*time.Second, 10*time.Millisecond, "the assign of %s never succeeded (is %q)", reservationID, state)
}

// workDir is where the daemon of node runs the exec jobs of reservation's
// allocation.
func (hs *harness) workDir(node, reservationID string) string {
	hs.t.Helper()
	var alloc string
	require.NoError(hs.t, hs.d.Pool.QueryRow(hs.ctx, "SELECT id FROM allocations WHERE reservation_id = $1",
		reservationID).Scan(&alloc))
	return filepath.Join(hs.workloads, node, alloc, "work")
}

func (hs *harness) run(actor core.Actor, cmd commands.RunNodeCommand) core.NodeCommand {
	hs.t.Helper()
	res, err := (commands.New(hs.d.Pool, commands.Config{})).RunNodeCommand(hs.ctx, actor, cmd)
	require.NoError(hs.t, err)
	return res.Command
}

func (hs *harness) command(id string) core.NodeCommand {
	hs.t.Helper()
	c, err := (commands.New(hs.d.Pool, commands.Config{})).GetNodeCommand(hs.ctx, operator, id)
	require.NoError(hs.t, err)
	return c
}

// awaitCommand waits (polling with a deadline) until the daemon's report
// moved the command to want.
func (hs *harness) awaitCommand(id string, want core.State) core.NodeCommand {
	hs.t.Helper()
	require.Eventually(hs.t, func() bool { return hs.command(id).State == want }, 10*time.Second, 5*time.Millisecond,
		"command %s never became %s (is %s)", id, want, hs.command(id).State)
	return hs.command(id)
}

func (hs *harness) commandEvents(id, typ string) int {
	hs.t.Helper()
	var n int
	require.NoError(hs.t, hs.d.Pool.QueryRow(hs.ctx,
		"SELECT count(*) FROM outbox WHERE type = $1 AND subject = $2 AND tenant_id = 'acme'",
		typ, core.NodeCommandSubject(id)).Scan(&n))
	return n
}

func exec(key, script string, retrySafe bool) commands.RunNodeCommand {
	return commands.RunNodeCommand{NodeID: "n1", IdempotencyKey: key, Kind: core.NodeCommandExec, RetrySafe: retrySafe,
		Payload: core.NodeCommandPayload{Script: script, TimeoutSeconds: 30}}
}

// A tenant's command goes from the API's handler through the dispatch work
// item and the gateway to the daemon, runs in its state dir, and its
// result is stored and evented; sending it again runs nothing twice.
func TestCommandRunsEndToEnd(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	g, url := hs.gateway("gw1")
	router := hs.router(g)
	dir := t.TempDir()
	hs.daemon("n1", dir, url)
	hs.eventually("n1", core.NodeConnected)
	hs.book("n1")

	c := hs.run(tenant, exec("k1", `echo "hello from $(basename "$PWD")"`, false))
	require.Equal(t, core.CommandQueued, c.State)
	require.NoError(t, router.HandleDispatch(hs.ctx, workqueue.Item{Kind: commands.KindNodeJobDispatch, Key: "n1"}))
	done := hs.awaitCommand(c.ID, core.CommandSucceeded)
	require.Equal(t, "hello from work\n", done.Output)
	require.NotNil(t, done.ExitCode)
	require.Equal(t, int32(0), *done.ExitCode)
	require.Equal(t, int64(4), done.Version, "queued, sent, running, succeeded")
	for _, typ := range []string{core.EventNodeCommandQueued, core.EventNodeCommandSent, core.EventNodeCommandRunning,
		core.EventNodeCommandSucceeded} {
		require.Equal(t, 1, hs.commandEvents(c.ID, typ), typ)
	}

	// The same key again is the same command; dispatching again sends
	// nothing, and the daemon ran it once.
	require.Equal(t, c.ID, hs.run(tenant, exec("k1", `echo "hello from $(basename "$PWD")"`, false)).ID)
	rep, err := g.Dispatch(hs.ctx, "n1")
	require.NoError(t, err)
	require.Empty(t, rep.Sent)
	require.Empty(t, rep.Resent)
	journal, err := os.ReadFile(filepath.Join(dir, "journal.jsonl"))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(journal), `"commandId":"`+c.ID+`","outcome":"started"`))

	// A failing command reports its exit code and output.
	// The work item lands in a process without the node's gateway: it is
	// done there, and the gateway's own poll sends the command.
	bad := hs.run(tenant, exec("k2", "echo oops >&2; exit 3", false))
	elsewhere := &gateway.NodeJobRouter{Commands: hs.s}
	require.NoError(t, elsewhere.HandleDispatch(hs.ctx, workqueue.Item{Kind: commands.KindNodeJobDispatch, Key: "n1"}))
	require.Equal(t, core.CommandQueued, hs.command(bad.ID).State)
	require.NoError(t, g.DispatchPending(hs.ctx))
	failed := hs.awaitCommand(bad.ID, core.CommandFailed)
	require.Equal(t, int32(3), *failed.ExitCode)
	require.Equal(t, "oops\n", failed.Output)

	// Output is capped at the daemon (its end is kept), so a chatty command
	// cannot break the session with an oversized message.
	epoch := hs.session("n1").SessionEpoch
	chatty := hs.run(tenant, exec("k3", `yes abcdefgh | head -c 200000; echo; echo tail-marker`, false))
	require.NoError(t, g.DispatchPending(hs.ctx))
	out := hs.awaitCommand(chatty.ID, core.CommandSucceeded).Output
	require.Len(t, out, 16<<10)
	require.True(t, strings.HasSuffix(out, "tail-marker\n"))
	require.Equal(t, epoch, hs.session("n1").SessionEpoch, "the same session throughout")
}

// A command waits until the daemon reports min_generation; commands behind
// it are not held up.
func TestCommandWaitsForGeneration(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	g, url := hs.gateway("gw1")
	hs.daemon("n1", t.TempDir(), url)
	hs.eventually("n1", core.NodeConnected)
	hs.book("n1") // generation 1: the assignment, applied
	require.Equal(t, int64(1), hs.session("n1").ObservedGeneration)
	// A second booking, whose window has begun, makes the node's desired
	// generation 2; its assign is not acknowledged yet. (A job may not ask
	// for a generation the node has not been given: it would wait forever.)
	now := hs.d.Now(t)
	_, err := (commands.New(hs.d.Pool, commands.Config{})).CreateReservation(hs.ctx, tenant, commands.CreateReservation{
		PoolID: "metal", GPUs: 1, Start: now, End: now.Add(time.Hour)})
	require.NoError(t, err)

	ahead := exec("k1", "true", false)
	ahead.MinGeneration = 2
	waiting := hs.run(tenant, ahead)
	ready := hs.run(tenant, exec("k2", "true", false))
	rep, err := g.Dispatch(hs.ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, []string{waiting.ID}, rep.Waiting)
	require.Contains(t, rep.Sent, ready.ID)
	hs.awaitCommand(ready.ID, core.CommandSucceeded)
	require.Equal(t, core.CommandQueued, hs.command(waiting.ID).State)
	require.Equal(t, 0, hs.commandEvents(waiting.ID, core.EventNodeCommandSent))
}

// A daemon that comes back with a new journal lost its memory: the
// in-flight command that is not retry-safe fails, the retry-safe one is
// sent again and runs.
func TestNewJournalFailsUnsafeAndResendsSafe(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	g, url := hs.gateway("gw1")
	router := hs.router(g)
	dir := t.TempDir()
	stop := hs.daemon("n1", dir, url)
	hs.eventually("n1", core.NodeConnected)
	rsv := hs.book("n1")

	// Both block until a file appears in the allocation's work dir.
	script := `while [ ! -f release ]; do sleep 0.01; done; echo released`
	unsafe := hs.run(tenant, exec("unsafe", script, false))
	safe := hs.run(tenant, exec("safe", script, true))
	require.NoError(t, router.HandleDispatch(hs.ctx, workqueue.Item{Kind: commands.KindNodeJobDispatch, Key: "n1"}))
	hs.awaitCommand(unsafe.ID, core.CommandRunning)
	hs.awaitCommand(safe.ID, core.CommandRunning)
	oldJournal := *hs.session("n1").JournalID

	// The daemon dies and its state dir loses the journal (the credential
	// survives: it is the same machine, with a wiped disk). Dies, not
	// stops: a stopped daemon reports its jobs failed before it closes its
	// session, a dead one says nothing. The gateway drops it, as a crash
	// would, and refuses it until the daemon is gone.
	g.Abandon()
	stop()
	require.NoError(t, g.Renew(hs.ctx))
	require.NoError(t, os.Remove(filepath.Join(dir, "journal-id")))
	require.NoError(t, os.Remove(filepath.Join(dir, "journal.jsonl")))
	require.NoError(t, os.WriteFile(filepath.Join(hs.workDir("n1", rsv), "release"), nil, 0o600))
	hs.daemon("n1", dir, url)
	require.Eventually(t, func() bool {
		s := hs.session("n1")
		return s.JournalID != nil && *s.JournalID != oldJournal
	}, 10*time.Second, 5*time.Millisecond, "the new daemon's session, with its new journal")
	// A daemon that lost its journal lost its assignments too: the control
	// plane assigns again (assign jobs are retry-safe).
	hs.assign("n1", rsv)

	require.Eventually(t, func() bool {
		err := router.HandleDispatch(hs.ctx, workqueue.Item{Kind: commands.KindNodeJobDispatch, Key: "n1"})
		return err == nil // Again while the new session registers at the gateway
	}, 10*time.Second, 5*time.Millisecond)
	lost := hs.awaitCommand(unsafe.ID, core.CommandFailed)
	require.Contains(t, lost.Reason, "daemon lost its memory")
	require.Equal(t, 1, hs.commandEvents(unsafe.ID, core.EventNodeCommandFailed))
	again := hs.awaitCommand(safe.ID, core.CommandSucceeded)
	require.Equal(t, "released\n", again.Output)
	journal, err := os.ReadFile(filepath.Join(dir, "journal.jsonl"))
	require.NoError(t, err)
	require.Contains(t, string(journal), safe.ID)
	require.NotContains(t, string(journal), unsafe.ID, "never replayed into the new journal")
}

// A zombie gateway, whose session was superseded by a newer epoch, can
// neither mark a command sent nor send it.
func TestZombieGatewayCannotDispatch(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	gwA, urlA := hs.gateway("gw-a")
	hs.gateway("gw-b")
	hs.daemon("n1", t.TempDir(), urlA)
	hs.eventually("n1", core.NodeConnected)
	// The gateway adds the session to its map just after the database has it.
	require.Eventually(t, func() bool { _, ok := gwA.Sessions()["n1"]; return ok }, 10*time.Second, 5*time.Millisecond)
	hs.book("n1")
	c := hs.run(tenant, exec("k1", "true", false))

	// The daemon reconnected through B; A has not noticed yet.
	_, err := hs.s.NodeSessions().OpenNodeSession(hs.ctx, commands.OpenNodeSession{NodeID: "n1", Gateway: leaseOf(t, hs, "gw-b"),
		GatewayID: "gw-b", JournalID: "other"})
	require.NoError(t, err)
	require.Contains(t, gwA.Sessions(), "n1")
	_, err = gwA.Dispatch(hs.ctx, "n1")
	require.ErrorIs(t, err, commands.ErrSessionSuperseded)
	require.NoError(t, gwA.DispatchPending(hs.ctx), "the zombie's poll finds nothing of its own to send")
	require.Equal(t, core.CommandQueued, hs.command(c.ID).State)
	require.Equal(t, 0, hs.commandEvents(c.ID, core.EventNodeCommandSent))
}
