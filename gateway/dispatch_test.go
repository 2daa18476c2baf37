package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/wire"
)

// queueJob queues an operator's wipe on node: the simplest node job.
func (f *fixture) queueJob(node, key string) string {
	f.t.Helper()
	res, err := f.h.RunNodeCommand(f.ctx, operator, commands.RunNodeCommand{NodeID: node, IdempotencyKey: key,
		Kind: "wipe"})
	require.NoError(f.t, err)
	return res.Command.ID
}

// dispatchedEpoch is the session epoch job was last marked sent at.
func (f *fixture) dispatchedEpoch(job string) int64 {
	f.t.Helper()
	c, err := f.d.Q.NodeCommandGet(f.ctx, job)
	require.NoError(f.t, err)
	require.NotNil(f.t, c.DispatchedEpoch, "job %s was never marked sent", job)
	return *c.DispatchedEpoch
}

// A write to a daemon inside InTx is refused (the gateway's writer asks
// the pg test hook), and dispatch (the router's, the gateway's poll and a
// direct one) writes none: it marks the jobs sent under the session row's
// lock, commits, and only then sends them, stamped with the session epoch.
func TestNoNetworkWriteInTransaction(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	g, url := f.liveGateway("gw1")
	d, epoch := f.wireDaemon(url, cred.Token)
	require.Eventually(t, func() bool { return g.Sessions()["n1"] == epoch }, 10*time.Second, 5*time.Millisecond)

	// The hook can fail: a send from inside a transaction is refused.
	err := pg.InTx(f.ctx, f.d.Pool, func(pgx.Tx) error {
		require.True(t, pg.InsideTx())
		return g.Send(f.ctx, "n1", wire.Message{Type: wire.TypeCommand, CommandID: "cmd_in_tx"})
	})
	require.ErrorContains(t, err, "inside a database transaction")
	require.False(t, pg.InsideTx())

	router := &gateway.NodeJobRouter{Commands: f.s}
	router.Register(g)
	jobs := []string{f.queueJob("n1", "k1")}
	require.NoError(t, router.HandleDispatch(f.ctx, workqueue.Item{Kind: commands.KindNodeJobDispatch, Key: "n1"}))
	jobs = append(jobs, f.queueJob("n1", "k2"))
	require.NoError(t, g.DispatchPending(f.ctx))
	jobs = append(jobs, f.queueJob("n1", "k3"))
	rep, err := g.Dispatch(f.ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, []string{jobs[2]}, rep.Sent)

	for _, id := range jobs {
		m := d.next()
		require.Equal(t, wire.TypeCommand, m.Type)
		require.Equal(t, id, m.CommandID, "in the order queued")
		require.Equal(t, epoch, m.SessionEpoch, "stamped with the session epoch")
		require.Equal(t, string(core.CommandSent), f.jobState(id))
		require.Equal(t, epoch, f.dispatchedEpoch(id))
	}
}

// Dispatch is at least once: a job marked sent whose send then failed is
// sent again. The failed write ends the session; the daemon reconnects at a
// new epoch, and dispatch re-sends every job in flight from another epoch.
func TestFailedSendIsSentAgain(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	g, url := f.liveGateway("gw1")
	var failed atomic.Bool
	gateway.SetBeforeWrite(g, func(_ context.Context, _ string, m wire.Message) error {
		if m.Type == wire.TypeCommand && failed.CompareAndSwap(false, true) {
			return errors.New("connection reset by peer")
		}
		return nil
	})
	d1, epoch1 := f.wireDaemon(url, cred.Token)
	require.Eventually(t, func() bool { return g.Sessions()["n1"] == epoch1 }, 10*time.Second, 5*time.Millisecond)
	job := f.queueJob("n1", "k1")

	_, err := g.Dispatch(f.ctx, "n1")
	require.ErrorContains(t, err, "connection reset by peer")
	require.Equal(t, string(core.CommandSent), f.jobState(job), "marked sent and committed before the send")
	require.Equal(t, epoch1, f.dispatchedEpoch(job))
	require.False(t, f.session("n1").Connected, "the session of the failed send ended")
	require.NotContains(t, g.Sessions(), "n1")
	_, open := <-d1.msgs
	require.False(t, open, "the daemon's connection was closed, so it reconnects")

	d2, epoch2 := f.wireDaemon(url, cred.Token)
	require.Equal(t, epoch1+1, epoch2)
	require.Eventually(t, func() bool { return g.Sessions()["n1"] == epoch2 }, 10*time.Second, 5*time.Millisecond)
	rep, err := g.Dispatch(f.ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, []string{job}, rep.Resent)
	m := d2.next()
	require.Equal(t, job, m.CommandID)
	require.Equal(t, epoch2, m.SessionEpoch)
	require.Equal(t, epoch2, f.dispatchedEpoch(job))
}

// manualTicks stands in for Run's tickers: fire delivers one tick to each,
// dropped like a time.Ticker's when the loop is still busy.
type manualTicks struct {
	mu sync.Mutex
	ch []chan time.Time
}

func (m *manualTicks) tick(time.Duration) (<-chan time.Time, func()) {
	c := make(chan time.Time, 1)
	m.mu.Lock()
	m.ch = append(m.ch, c)
	m.mu.Unlock()
	return c, func() {}
}

func (m *manualTicks) fire() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.ch {
		select {
		case c <- time.Time{}:
		default:
		}
	}
}

// A dispatch blocked on a daemon that does not read, while the simulated
// clock passes twice the gateway's lease TTL, costs the gateway neither its
// lease nor its sessions: Run renews and flushes on loops of their own.
func TestGatewayKeepsLeaseDuringSlowDispatch(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	ticks := &manualTicks{}
	g := &gateway.Gateway{ID: "gw1", Owner: "gw1-process", Commands: f.s, Tick: ticks.tick}
	blocked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	gateway.SetBeforeWrite(g, func(ctx context.Context, _ string, m wire.Message) error {
		if m.Type != wire.TypeCommand {
			return nil
		}
		once.Do(func() { close(blocked) })
		select { // the daemon reads nothing until the test says
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(f.ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); g.Run(ctx) }()
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(func() { unblock(); cancel(); <-ran })

	leaseRow := func() (int64, time.Time) {
		var epoch int64
		var expires time.Time
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT epoch, expires_at FROM leases WHERE name = $1",
			gateway.GatewayLeaseName("gw1")).Scan(&epoch, &expires))
		return epoch, expires
	}
	renewedNow := func() bool { // renewed at the current simulated time
		var ok bool
		err := f.d.Pool.QueryRow(f.ctx, `SELECT coalesce((SELECT expires_at = compute_now() + make_interval(secs => $2)
			FROM leases WHERE name = $1), false)`, gateway.GatewayLeaseName("gw1"), lease.GatewayTTL.Seconds()).Scan(&ok)
		return err == nil && ok
	}
	require.Eventually(t, renewedNow, 10*time.Second, 5*time.Millisecond, "Run takes the lease at once")
	leaseEpoch, _ := leaseRow()
	d, epoch := f.wireDaemon("ws://"+strings.TrimPrefix(srv.URL, "http://")+wire.Path, cred.Token)
	require.Eventually(t, func() bool { return g.Sessions()["n1"] == epoch }, 10*time.Second, 5*time.Millisecond)

	job := f.queueJob("n1", "k1")
	require.Eventually(t, func() bool {
		ticks.fire() // the dispatch poll finds the job and blocks writing it
		select {
		case <-blocked:
			return true
		default:
			return false
		}
	}, 10*time.Second, 5*time.Millisecond)

	for elapsed := time.Duration(0); elapsed < 2*lease.GatewayTTL; elapsed += lease.RenewEvery {
		f.d.AdvanceSimClock(t, lease.RenewEvery)
		require.Eventually(t, func() bool { ticks.fire(); return renewedNow() }, 10*time.Second, 5*time.Millisecond,
			"the lease is renewed %s into the blocked dispatch", elapsed+lease.RenewEvery)
		err := commandstest.SweepLiveness(f.ctx, f.s)
		require.NoError(t, err)
		require.True(t, f.session("n1").Connected, "the node's session survives the sweep")
	}
	l, _ := leaseRow()
	require.Equal(t, leaseEpoch, l, "never lost, never taken over")
	require.Equal(t, epoch, f.session("n1").SessionEpoch)
	require.Equal(t, map[string]int64{"n1": epoch}, g.Sessions())
	f.requireState("n1", core.NodeConnected)

	// The daemon reads again: the job arrives, once, at the same epoch.
	unblock()
	m := d.next()
	require.Equal(t, job, m.CommandID)
	require.Equal(t, epoch, m.SessionEpoch)
}

// A daemon's session is sent no assign before the inventory it sends after
// its hello is reconciled: a booking made while it was away waits, and
// the gateway's poll does not even visit the node for it; other jobs go.
// The reconcile wakes the node's dispatch, which then sends the assign.
func TestAssignWaitsForTheDaemonsInventory(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	g, url := f.liveGateway("gw1")
	router := &gateway.NodeJobRouter{Commands: f.s}
	router.Register(g)
	d, epoch, _ := f.wireDaemonUnreported(url, cred.Token)
	require.Eventually(t, func() bool { return g.Sessions()["n1"] == epoch }, 10*time.Second, 5*time.Millisecond)
	f.activeReservation(t)

	rep, err := g.Dispatch(f.ctx, "n1")
	require.NoError(t, err)
	require.Empty(t, rep.Sent, "no assign before the daemon's inventory is reconciled")
	require.Len(t, rep.Waiting, 1)
	waiting, err := f.d.Q.NodeCommandNodesToDispatch(f.ctx, "gw1")
	require.NoError(t, err)
	require.Empty(t, waiting, "nothing for the gateway's poll to send")
	wipe := f.queueJob("n1", "k1")
	rep, err = g.Dispatch(f.ctx, "n1")
	require.NoError(t, err)
	require.Equal(t, []string{wipe}, rep.Sent, "other jobs go")
	require.Equal(t, wipe, d.next().CommandID)

	st, err := json.Marshal(wire.NodeState{GPUs: []wire.InventoryGPU{{UUID: "GPU-n1-0", Model: "h100", MemoryMB: 81920},
		{UUID: "GPU-n1-1", Model: "h100", MemoryMB: 81920}}, Assignments: []wire.AssignPayload{}})
	require.NoError(t, err)
	_, err = f.d.Pool.Exec(f.ctx, "DELETE FROM work_queue WHERE kind = $1 AND key = 'n1'", commands.KindNodeJobDispatch)
	require.NoError(t, err)
	d.send(wire.Message{Type: wire.TypeInventory, JournalID: "j1", Payload: st})
	require.Eventually(t, func() bool {
		_, err := f.d.Q.WorkQueueGet(f.ctx, db.WorkQueueGetParams{Kind: commands.KindNodeJobDispatch, Key: "n1"})
		return err == nil
	}, 10*time.Second, 5*time.Millisecond, "the reconcile wakes the node's dispatch")
	waiting, err = f.d.Q.NodeCommandNodesToDispatch(f.ctx, "gw1")
	require.NoError(t, err)
	require.Equal(t, []string{"n1"}, waiting)
	require.NoError(t, router.HandleDispatch(f.ctx, workqueue.Item{Kind: commands.KindNodeJobDispatch, Key: "n1"}))
	m := d.next()
	require.Equal(t, wire.CommandKindAssign, m.CommandKind)
	require.Equal(t, epoch, m.SessionEpoch)
}

// A daemon whose assignments cannot be reconciled would be sent no assign
// for its session's life: the gateway ends the session instead, and the
// daemon reconnects and reports again.
func TestUnreconciledInventoryEndsTheSession(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	_, url := f.liveGateway("gw1")
	// The reconcile fails, whatever the daemon reports.
	_, err := f.d.Pool.Exec(f.ctx, `
CREATE FUNCTION refuse_reconcile() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'reconcile refused by the test'; END $$;
CREATE TRIGGER refuse_reconcile BEFORE UPDATE OF inventory_reconciled_epoch ON node_sessions
  FOR EACH ROW EXECUTE FUNCTION refuse_reconcile();`)
	require.NoError(t, err)
	d, epoch, _ := f.wireDaemonUnreported(url, cred.Token)
	st, err := json.Marshal(wire.NodeState{GPUs: []wire.InventoryGPU{{UUID: "GPU-n1-0", Model: "h100", MemoryMB: 81920},
		{UUID: "GPU-n1-1", Model: "h100", MemoryMB: 81920}}, Assignments: []wire.AssignPayload{}})
	require.NoError(t, err)
	d.send(wire.Message{Type: wire.TypeInventory, JournalID: "j1", Payload: st})
	require.Eventually(t, func() bool { return !f.session("n1").Connected }, 10*time.Second, 5*time.Millisecond,
		"the session ended")
	for range d.msgs { // the gateway closed the connection: the daemon reconnects
	}
	s := f.session("n1")
	require.Equal(t, epoch, s.SessionEpoch)
	require.Nil(t, s.InventoryReconciledEpoch)
}
