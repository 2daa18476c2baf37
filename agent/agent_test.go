package agent_test

import (
	"cmp"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/wire"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var operator = core.Actor{Tenant: "ops", Identity: "alice@ops", Role: core.RoleOperator}

// directJoiner joins without the HTTP API: register, then issue a credential.
type directJoiner struct {
	h *commands.Handlers
	s *commands.Handlers
}

func (j directJoiner) Join(ctx context.Context, nodeID string, inv agent.Inventory) (string, error) {
	var gpus []commands.GPUInventory
	for _, g := range inv.GPUs {
		gpus = append(gpus, commands.GPUInventory{UUID: g.UUID, Model: g.Model, MemoryMB: g.MemoryMB,
			Layout: core.GPULayout{Mode: core.GPUExclusive}})
	}
	if _, err := j.h.RegisterNode(ctx, operator, commands.RegisterNode{ID: nodeID, PoolID: inv.PoolID, VCPU: inv.VCPU,
		MemoryMB: inv.MemoryMB, DiskGB: inv.DiskGB, GPUs: gpus}); err != nil && core.CodeOf(err) != core.CodeConflict {
		return "", err // a node that joins again is registered already
	}
	c, err := j.s.JoinNode(ctx, operator, nodeID)
	return c.Token, err
}

type harness struct {
	t    *testing.T
	ctx  context.Context
	d    *pgtest.DB
	s    *commands.Handlers
	join directJoiner

	mu       sync.Mutex
	messages []wire.Message // what daemons sent, past hello

	// workloads is the root of the daemons' workload directories: one
	// every user can traverse (t.TempDir is not), removed at the end.
	workloads string
	// isolation is the daemons' workload isolation (default
	// agent.IsolationNone: the protocol with plain processes).
	isolation string
	// gws are the gateways started, which job sends through.
	gws []*gateway.Gateway
}

func newHarness(t *testing.T) *harness {
	d := pgtest.New(t)
	hs := &harness{t: t, ctx: context.Background(), d: d, s: commands.New(d.Pool, commands.Config{})}
	wl, err := os.MkdirTemp("", "compute-agent-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(wl, 0o711))
	t.Cleanup(func() {
		testenv.UnmountUnder(wl) // the allocations' /work the daemons did not release
		_ = os.RemoveAll(wl)
	})
	hs.workloads = wl
	h := commands.New(d.Pool, commands.Config{})
	hs.join = directJoiner{h: h, s: hs.s}
	_, err = h.CreateSite(hs.ctx, operator, commands.CreateSite{ID: "fra1", Name: "Frankfurt 1"})
	require.NoError(t, err)
	_, err = h.CreatePool(hs.ctx, operator, commands.CreatePool{ID: "metal", SiteID: "fra1", Kind: commands.PoolBareMetal})
	require.NoError(t, err)
	err = commandstest.SweepLiveness(hs.ctx, hs.s)
	require.NoError(t, err)
	return hs
}

// gateway starts a gateway on loopback; it renews only when the test says.
func (hs *harness) gateway(id string) (*gateway.Gateway, string) {
	g := &gateway.Gateway{ID: id, Owner: id + "-process", Commands: hs.s,
		OnMessage: func(_ string, _ int64, m wire.Message) {
			hs.mu.Lock()
			hs.messages = append(hs.messages, m)
			hs.mu.Unlock()
		}}
	require.NoError(hs.t, g.Renew(hs.ctx))
	hs.mu.Lock()
	hs.gws = append(hs.gws, g)
	hs.mu.Unlock()
	srv := httptest.NewServer(g)
	hs.t.Cleanup(srv.Close)
	return g, "ws://" + strings.TrimPrefix(srv.URL, "http://")
}

// daemon starts `compute agent` in-process; cancel kills it.
func (hs *harness) daemon(node, dir string, gateways ...string) context.CancelFunc {
	return hs.daemonWith(node, dir, func(*agent.Config) {}, gateways...)
}

// daemonWith is daemon with its configuration changed by tweak.
func (hs *harness) daemonWith(node, dir string, tweak func(*agent.Config), gateways ...string) context.CancelFunc {
	ctx, cancel := context.WithCancel(hs.ctx)
	done := make(chan struct{})
	cfg := agent.Config{NodeID: node, PoolID: "metal", GatewayURLs: gateways, StateDir: dir,
		FakeGPUs: "2xH100-80GB", VCPU: 32, MemoryMB: 65536, DiskGB: 500, Joiner: hs.join,
		WorkloadDir: filepath.Join(hs.workloads, node), WorkloadIsolation: cmp.Or(hs.isolation, agent.IsolationNone),
		Now:            hs.clock(),
		ReconnectDelay: 10 * time.Millisecond}
	tweak(&cfg)
	go func() {
		defer close(done)
		err := agent.Run(ctx, cfg)
		if err != nil {
			hs.t.Errorf("agent %s: %v", node, err)
		}
	}()
	stop := func() { cancel(); <-done }
	hs.t.Cleanup(stop)
	return stop
}

// clock is the control plane's simulated clock, as the daemons read it.
// A daemon may read it while the test ends and its database goes: a read
// that fails gives the last time read, never a failure from a goroutine
// the test does not own.
func (hs *harness) clock() func() time.Time {
	var mu sync.Mutex
	var last time.Time
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		var now time.Time
		if err := hs.d.Pool.QueryRow(context.Background(), "SELECT compute_now()").Scan(&now); err == nil {
			last = now
		} else if last.IsZero() {
			last = time.Now()
		}
		return last
	}
}

func (hs *harness) session(node string) db.NodeSession {
	s, err := hs.d.Q.NodeSessionGet(hs.ctx, node)
	require.NoError(hs.t, err)
	return s
}

func (hs *harness) state(node string) string {
	n, err := hs.d.Q.NodeGet(hs.ctx, node)
	if err != nil {
		return ""
	}
	return n.State
}

func (hs *harness) eventually(node string, want core.State) {
	hs.t.Helper()
	require.Eventually(hs.t, func() bool { return hs.state(node) == string(want) }, 10*time.Second, 5*time.Millisecond,
		"node %s never became %s (is %s)", node, want, hs.state(node))
}

// advance moves simulated time in sweep-sized steps, renewing gateways.
func (hs *harness) advance(d time.Duration, live ...*gateway.Gateway) {
	for d > 0 {
		step := min(d, commands.LivenessSweepEvery)
		hs.d.AdvanceSimClock(hs.t, step)
		d -= step
		for _, g := range live {
			require.NoError(hs.t, g.Renew(hs.ctx))
		}
		err := commandstest.SweepLiveness(hs.ctx, hs.s)
		require.NoError(hs.t, err)
	}
}

func (hs *harness) sent(typ string) []wire.Message {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	var out []wire.Message
	for _, m := range hs.messages {
		if m.Type == typ {
			out = append(out, m)
		}
	}
	return out
}

func TestDaemonsThroughGateways(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	gw1, url1 := hs.gateway("gw1")
	dir1, dir2 := t.TempDir(), t.TempDir()
	kill1 := hs.daemon("n1", dir1, url1)
	hs.daemon("n2", dir2, url1)
	hs.eventually("n1", core.NodeConnected)
	hs.eventually("n2", core.NodeConnected)
	require.Equal(t, int64(1), hs.session("n1").SessionEpoch)

	// Defense in depth: the daemon refuses an assignment overlapping one it
	// holds, and the control plane fails that reservation.
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	gpu := func(id string) wire.AssignedDevice {
		return wire.AssignedDevice{ID: id, GPU: id, Kind: "gpu", Visible: id}
	}
	accepted := hs.job("n1", wire.CommandKindAssign, "alc_a", wire.AssignPayload{AllocationID: "alc_a",
		Devices: []wire.AssignedDevice{gpu("GPU-n1-0")}, VCPU: 1, Start: start, End: start.Add(time.Hour)})
	require.Equal(t, "succeeded", accepted.State, accepted.Reason)
	refused := hs.job("n1", wire.CommandKindAssign, "alc_b", wire.AssignPayload{AllocationID: "alc_b",
		Devices: []wire.AssignedDevice{gpu("GPU-n1-0"), gpu("GPU-n1-1")}, VCPU: 1, Start: start, End: start.Add(time.Hour)})
	require.Equal(t, "failed", refused.State)
	require.True(t, strings.HasPrefix(refused.Reason, wire.RefusedPrefix), refused.Reason)

	// Kill a daemon: its session closes, the node is disconnected, and 40 s
	// later unreachable. Nothing is released.
	kill1()
	hs.eventually("n1", core.NodeDisconnected)
	hs.advance(commands.NoSessionAfter-time.Second, gw1)
	require.Equal(t, string(core.NodeDisconnected), hs.state("n1"))
	hs.advance(time.Second, gw1)
	require.Equal(t, string(core.NodeUnreachable), hs.state("n1"))
	require.Equal(t, string(core.NodeConnected), hs.state("n2"))

	// It comes back with its journal: a new epoch, the same journal id, and
	// the replay carries the assignment it holds (and not the refused one).
	hs.daemon("n1", dir1, url1)
	hs.eventually("n1", core.NodeConnected)
	require.Equal(t, int64(2), hs.session("n1").SessionEpoch)
	require.Eventually(t, func() bool { return len(hs.sent(wire.TypeReplay)) >= 3 }, 10*time.Second, 5*time.Millisecond)
	replays := hs.sent(wire.TypeReplay)
	last := replays[len(replays)-1]
	var assigned []string
	for _, e := range last.Journal {
		if e.Kind == "assign" {
			assigned = append(assigned, e.AllocationID)
		}
	}
	require.Equal(t, []string{"alc_a"}, assigned)

	// Kill the gateway: it records nothing, its lease lapses 20 s after the
	// last renewal, and the nodes get the 120 s gateway grace.
	gw1.Abandon()
	hs.advance(lease.GatewayTTL - time.Second)
	require.Equal(t, string(core.NodeConnected), hs.state("n2"))
	hs.advance(time.Second)
	require.Equal(t, string(core.NodeDisconnected), hs.state("n2"))
	require.Equal(t, "gateway-lost", hs.session("n2").GraceReason)
	hs.advance(commands.NoSessionAfter + commands.GatewayLostGrace - time.Second)
	require.Equal(t, string(core.NodeDisconnected), hs.state("n2"))
	hs.advance(time.Second)
	require.Equal(t, string(core.NodeUnreachable), hs.state("n2"))
}

// Epochs fence zombies: a gateway that still holds a stale session (the
// daemon reconnected elsewhere) drops it at its next flush and cannot mark
// the node.
func TestZombieGatewayDropsSupersededSession(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	gwA, urlA := hs.gateway("gw-a")
	_, urlB := hs.gateway("gw-b")
	hs.daemon("n1", t.TempDir(), urlA, urlB)
	hs.eventually("n1", core.NodeConnected)
	// The database records the session before the gateway adds it to its
	// in-memory map: wait for the map too.
	require.Eventually(t, func() bool { _, ok := gwA.Sessions()["n1"]; return ok }, 10*time.Second, 5*time.Millisecond)

	// The daemon's connection to A breaks in a way A does not notice yet:
	// simulate with a second session opened at B (the daemon reconnecting).
	sess, err := hs.s.NodeSessions().OpenNodeSession(hs.ctx, commands.OpenNodeSession{NodeID: "n1", Gateway: leaseOf(t, hs, "gw-b"),
		GatewayID: "gw-b", JournalID: "other"})
	require.NoError(t, err)
	require.Equal(t, int64(2), sess.Epoch)

	require.NoError(t, gwA.Flush(hs.ctx))
	require.NotContains(t, gwA.Sessions(), "n1", "the zombie dropped its stale session")
	// Dropping it recorded nothing: the node stays connected on the newer
	// session (the daemon then reconnects and supersedes again).
	require.GreaterOrEqual(t, hs.session("n1").SessionEpoch, int64(2))
	require.True(t, hs.session("n1").Connected)
	require.Equal(t, string(core.NodeConnected), hs.state("n1"))
	require.Eventually(t, func() bool { return hs.session("n1").SessionEpoch >= 3 }, 10*time.Second, 5*time.Millisecond)
}

// A gateway whose wall clock is hours off still reports true ages: the
// database computes last_seen_at, so liveness cannot be faked.
func TestSkewedGatewayClockReportsAges(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	g, url := hs.gateway("gw1")
	g.Now = func() time.Time { return time.Now().Add(3 * time.Hour) }
	hs.daemon("n1", t.TempDir(), url)
	// The session is the gateway's once the daemon's replay is read: the
	// node shows connected a moment before, when a flush would find no
	// session to report.
	served := func(replays int) {
		hs.eventually("n1", core.NodeConnected)
		require.Eventually(t, func() bool { return len(hs.sent(wire.TypeReplay)) > replays }, 10*time.Second, 5*time.Millisecond)
	}
	served(0)
	// A daemon that reconnects meanwhile opens a session whose last_seen_at
	// is its opening, which proves nothing about the flush: try again on
	// the session that stayed.
	for attempt := 1; ; attempt++ {
		epoch := hs.session("n1").SessionEpoch
		replays := len(hs.sent(wire.TypeReplay))
		hs.d.AdvanceSimClock(t, time.Minute)
		require.NoError(t, g.Renew(hs.ctx))
		require.NoError(t, g.Flush(hs.ctx))
		s := hs.session("n1")
		if s.SessionEpoch != epoch && attempt < 5 {
			served(replays)
			continue
		}
		require.Equal(t, epoch, s.SessionEpoch, "the daemon kept reconnecting")
		now := hs.d.Now(t)
		seen := *s.LastSeenAt
		require.False(t, seen.After(now), "never in the future")
		require.WithinDuration(t, now, seen, 5*time.Second, "an age of moments, whatever the gateway's clock says")
		return
	}
}

func leaseOf(t *testing.T, hs *harness, gw string) lease.Lease {
	l, err := lease.Acquire(hs.ctx, hs.d.Q, gateway.GatewayLeaseName(gw), gw+"-process", lease.GatewayTTL)
	require.NoError(t, err)
	return l
}

// A daemon whose credential is revoked (its session ends, the gateway
// answers 401) joins again when a join token is at hand, and carries on
// with the new credential, which it keeps in its state directory.
func TestRevokedCredentialRejoins(t *testing.T) {
	t.Parallel()
	hs := newHarness(t)
	gw, url := hs.gateway("gw1")
	dir := t.TempDir()
	hs.daemon("n1", dir, url)
	hs.eventually("n1", core.NodeConnected)
	require.Eventually(t, func() bool { _, ok := gw.Sessions()["n1"]; return ok }, 10*time.Second, 5*time.Millisecond)
	first, err := os.ReadFile(filepath.Join(dir, "credential"))
	require.NoError(t, err)
	creds, err := hs.d.Q.NodeCredentialList(hs.ctx, "n1")
	require.NoError(t, err)
	require.Len(t, creds, 1)
	epoch := hs.session("n1").SessionEpoch

	require.NoError(t, hs.s.RevokeNodeCredential(hs.ctx, operator, "n1", creds[0].ID))
	require.NoError(t, gw.Flush(hs.ctx)) // the gateway drops the revoked session
	require.Eventually(t, func() bool {
		s := hs.session("n1")
		return s.Connected && s.SessionEpoch > epoch
	}, 10*time.Second, 5*time.Millisecond, "the daemon is back, on a new session")
	again, err := os.ReadFile(filepath.Join(dir, "credential"))
	require.NoError(t, err)
	require.NotEqual(t, string(first), string(again), "with a new credential, kept for its next start")
	creds, err = hs.d.Q.NodeCredentialList(hs.ctx, "n1")
	require.NoError(t, err)
	require.Len(t, creds, 2)
}
