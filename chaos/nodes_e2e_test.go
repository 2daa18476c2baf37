package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/migrate"
	"github.com/bettercompute/compute/internal/testenv"
)

// TestNodesEndToEnd is issue 5's "Done when": a server, a separate gateway
// process and two `compute agent` processes with fake GPUs; a reservation
// on each node, a command and an instance on one of them; then a daemon and
// a gateway are SIGKILLed and every liveness transition is checked, with its
// timing, in simulated time, together with the epochs that fence the old
// sessions and the absence of any release.
//
// Simulated time. The database runs on compute_sim_clock from before the
// first process starts, so leases, work-queue due times and liveness all
// read it. The processes still renew their leases every 5 s of real time, so
// the test moves the clock the way a healthy control plane lives through
// it: in steps of at most one sweep period, extending the leases of the
// processes that are alive by the same step (what their renewals would have
// done) and leaving those of killed processes to lapse, then waiting until
// every liveness item that is due has run.
func TestNodesEndToEnd(t *testing.T) {
	runSize(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	began := time.Now()
	phase := func(name string) { t.Logf("[%6.2fs] %s", time.Since(began).Seconds(), name) }

	dbURL, pool := freshDatabase(t)
	if err := migrate.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "SELECT compute_use_sim_clock(true)"); err != nil {
		t.Fatal(err)
	}
	sim := &simClock{t: t, pool: pool}
	phase("database migrated, simulated clock on at " + sim.now(ctx).Format(time.RFC3339))

	// The main process (gateway "nodes-main") and a gateway-only process
	// ("nodes-edge"). Node A connects to the first, node B to the second.
	hub := newServer(t, "nodes-main", dbURL, "api,worker,dispatcher,gateway")
	edge := newServer(t, "nodes-edge", dbURL, "gateway")
	for _, s := range []*server{hub, edge} {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	phase("servers up")

	op := newClient(createToken(t, dbURL, "ops", "nodes-operator", "operator"))
	member := newClient(createToken(t, dbURL, tenant, "nodes-member", "member"))
	must := func(c *client, method, path, key string, body, out any) {
		t.Helper()
		if err := c.do(ctx, method, hub.URL()+path, key, body, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	must(op, "POST", "/v1/sites", "", map[string]any{"id": "nodes-site", "name": "Nodes site"}, nil)
	for _, p := range []string{"pool-a", "pool-b"} {
		must(op, "POST", "/v1/pools", "", map[string]any{"id": p, "siteId": "nodes-site", "kind": "bare-metal"}, nil)
	}
	for res, max := range map[string]int64{"gpu": 8, "vcpu": 1 << 20, "memory": 1 << 30, "disk": 1 << 30} {
		must(op, "PUT", "/v1/tenants/"+tenant+"/quotas/"+res, "", map[string]any{"max": max}, nil)
	}

	// Both join through the main process's API; each keeps its session
	// through its own gateway.
	// Each with a single-use join token: no daemon ever holds an operator
	// token.
	joinToken := func(node string) string {
		var jt struct{ Token string }
		must(op, "POST", "/v1/nodes/"+node+"/join-tokens", "", map[string]any{}, &jt)
		return jt.Token
	}
	agentA := newAgent(t, "node-a", "pool-a", joinToken("node-a"), hub.URL(), hub)
	agentB := newAgent(t, "node-b", "pool-b", joinToken("node-b"), hub.URL(), edge)
	for _, a := range []*agentProc{agentA, agentB} {
		a.Start()
	}
	waitFor(t, ctx, "both nodes connected", 30*time.Second, func() (bool, error) {
		a, b := sessionOf(ctx, pool, "node-a"), sessionOf(ctx, pool, "node-b")
		return a.Connected && b.Connected && a.State == "connected" && b.State == "connected", nil
	})
	sA1, sB1 := sessionOf(ctx, pool, "node-a"), sessionOf(ctx, pool, "node-b")
	if sA1.Gateway != "nodes-main" || sB1.Gateway != "nodes-edge" {
		t.Fatalf("gateways: node-a on %q, node-b on %q", sA1.Gateway, sB1.Gateway)
	}
	phase(fmt.Sprintf("agents connected: node-a epoch %d, node-b epoch %d", sA1.Epoch, sB1.Epoch))

	// A reservation on each node, booked by the member. --fake-gpus
	// 2xH100-80GB registers two GPUs of model H100-80GB (81920 MB each).
	now := sim.now(ctx)
	book := func(poolID string) reservationJSON {
		var r reservationJSON
		must(member, "POST", "/v1/reservations", uuid.NewString(), map[string]any{"poolId": poolID, "gpus": 1,
			"gpuModel": "H100-80GB", "vcpu": 1, "memoryMb": 1024, "diskGb": 1,
			"start": now.Format(time.RFC3339), "end": now.Add(2 * time.Hour).Format(time.RFC3339)}, &r)
		// A reservation the API could not place at once is pending until
		// the scheduler places it.
		waitFor(t, ctx, "reservation in "+poolID+" booked", 30*time.Second, func() (bool, error) {
			if err := pool.QueryRow(ctx, "SELECT state FROM reservations WHERE id = $1", r.ID).Scan(&r.State); err != nil {
				return false, err
			}
			if r.State != "pending" && r.State != "booked" && r.State != "active" {
				return false, fmt.Errorf("reservation in %s: %+v", poolID, r)
			}
			return r.State == "booked" || r.State == "active", nil
		})
		return r
	}
	resA, resB := book("pool-a"), book("pool-b")
	holdA, holdB := holdingsOf(t, ctx, pool, resA.ID), holdingsOf(t, ctx, pool, resB.ID)
	if holdA.Node != "node-a" || holdB.Node != "node-b" {
		t.Fatalf("placement: %+v %+v", holdA, holdB)
	}
	phase("reservations booked: " + resA.ID + " on node-a, " + resB.ID + " on node-b")

	// A booking whose window has not begun runs nothing on the node.
	var future reservationJSON
	must(member, "POST", "/v1/reservations", uuid.NewString(), map[string]any{"poolId": "pool-a", "gpus": 1,
		"gpuModel": "H100-80GB", "vcpu": 1, "memoryMb": 1024, "diskGb": 1,
		"start": now.Add(7 * 24 * time.Hour).Format(time.RFC3339), "end": now.Add(8 * 24 * time.Hour).Format(time.RFC3339)}, &future)
	futureAlloc := holdingsOf(t, ctx, pool, future.ID).Allocation
	err := member.do(ctx, "POST", hub.URL()+"/v1/commands", "nodes-e2e-future", map[string]any{"nodeId": "node-a",
		"allocationId": futureAlloc, "kind": "exec", "payload": map[string]any{"script": "id"}}, nil)
	if es, ok := err.(errStatus); !ok || es.status != 409 {
		t.Fatalf("exec on a booking 7 days ahead: %v, want 409", err)
	}
	waitFor(t, ctx, "reservation on node-a active", 30*time.Second, func() (bool, error) {
		var st string
		err := pool.QueryRow(ctx, "SELECT state FROM reservations WHERE id = $1", resA.ID).Scan(&st)
		return st == "active", err
	})

	// A command on node A, through the gateway of the main process. It is
	// also a hostile tenant's probe of the daemon: it must not read the
	// node credential, and the daemon's command line must hold no token.
	var cmd struct {
		ID, State, Output string
		ExitCode          *int `json:"exitCode"`
	}
	probe := fmt.Sprintf(`echo hi
cat %s/credential >/dev/null 2>&1 && echo credential:readable
{ tr '\0' ' ' </proc/%d/cmdline; } 2>/dev/null || echo daemon:invisible`, agentA.stateDir(), agentA.cmd.Process.Pid)
	must(member, "POST", "/v1/commands", "nodes-e2e-echo", map[string]any{"nodeId": "node-a", "kind": "exec",
		"payload": map[string]any{"script": probe}}, &cmd)
	waitFor(t, ctx, "command succeeded", 30*time.Second, func() (bool, error) {
		if err := member.do(ctx, "GET", hub.URL()+"/v1/commands/"+cmd.ID, "", nil, &cmd); err != nil {
			return false, err
		}
		if cmd.State == "failed" {
			return false, fmt.Errorf("command failed: %+v", cmd)
		}
		return cmd.State == "succeeded", nil
	})
	// The workload runs in its own pid namespace: the daemon is not even
	// in its /proc. The daemon's command line, which every user of the
	// machine can read, holds no token either.
	lines := strings.Split(strings.TrimSpace(cmd.Output), "\n")
	if len(lines) != 2 || lines[0] != "hi" || lines[1] != "daemon:invisible" || cmd.ExitCode == nil || *cmd.ExitCode != 0 {
		t.Fatalf("command result (want hi, then daemon:invisible, nothing readable): %+v", cmd)
	}
	daemonCmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", agentA.cmd.Process.Pid))
	if err != nil || !strings.Contains(string(daemonCmdline), "node-a") {
		t.Fatalf("the daemon's command line: %q, %v", daemonCmdline, err)
	}
	if s := string(daemonCmdline); strings.Contains(s, op.token) || strings.Contains(s, "bc_") || strings.Contains(s, "bcj_") {
		t.Fatalf("the daemon's command line shows a token: %q", s)
	}
	if _, err := os.Stat(agentA.tokenFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("join token file left after joining: %v", err)
	}
	phase("command " + cmd.ID + " succeeded")

	// An instance on node A's reservation.
	var inst struct{ ID, State, NodeID, Reason string }
	must(member, "POST", "/v1/instances", "nodes-e2e-inst", map[string]any{"reservationId": resA.ID}, &inst)
	waitFor(t, ctx, "instance running", 30*time.Second, func() (bool, error) {
		if err := member.do(ctx, "GET", hub.URL()+"/v1/instances/"+inst.ID, "", nil, &inst); err != nil {
			return false, err
		}
		if inst.State == "failed" {
			return false, fmt.Errorf("instance failed: %+v", inst)
		}
		return inst.State == "running", nil
	})
	if inst.NodeID != "node-a" {
		t.Fatalf("instance on %q", inst.NodeID)
	}
	phase("instance " + inst.ID + " running")

	nothingReleased := func(when string) {
		t.Helper()
		for _, want := range []holdings{holdA, holdB} {
			got := holdingsOf(t, ctx, pool, want.Reservation)
			if !slices.Contains([]string{"booked", "active"}, got.State) || !got.equalHold(want) {
				t.Fatalf("%s: reservation %s changed:\n was %+v\n now %+v", when, want.Reservation, want, got)
			}
		}
		var st string
		if err := pool.QueryRow(ctx, "SELECT state FROM instances WHERE id = $1", inst.ID).Scan(&st); err != nil {
			t.Fatal(err)
		}
		if st != "running" {
			t.Fatalf("%s: instance %s is %s", when, inst.ID, st)
		}
	}

	// --- Daemon A dies: connected → disconnected at once (its gateway sees
	// the connection close), unreachable 40 s later, nothing released.
	agentA.Kill()
	waitFor(t, ctx, "node-a disconnected", 15*time.Second, func() (bool, error) {
		s := sessionOf(ctx, pool, "node-a")
		return !s.Connected && s.State == "disconnected", nil
	})
	sA := sessionOf(ctx, pool, "node-a")
	if sA.Epoch != sA1.Epoch || sA.CloseReason != "closed" || sA.Grace != "none" || slices.Contains(sA.Reasons, "unreachable") {
		t.Fatalf("node-a after daemon kill: %+v", sA)
	}
	dsA := sA.DisconnectedSince
	phase(fmt.Sprintf("node-a disconnected since %s (sim now %s)", dsA.Format(time.RFC3339Nano), sim.now(ctx).Format(time.RFC3339Nano)))
	nothingReleased("node-a disconnected")

	sim.advanceTo(ctx, dsA.Add(commands.NoSessionAfter-time.Second))
	if s := sessionOf(ctx, pool, "node-a"); s.State != "disconnected" || slices.Contains(s.Reasons, "unreachable") {
		t.Fatalf("node-a 39 s after disconnect: %+v", s)
	}
	sim.advanceTo(ctx, dsA.Add(commands.NoSessionAfter))
	waitFor(t, ctx, "node-a unreachable at 40 s", 10*time.Second, func() (bool, error) {
		return sessionOf(ctx, pool, "node-a").State == "unreachable", nil
	})
	sA = sessionOf(ctx, pool, "node-a")
	if !slices.Contains(sA.Reasons, "unreachable") || sA.UnreachableSince == nil ||
		!sA.UnreachableSince.Equal(dsA.Add(commands.NoSessionAfter)) || !sA.hasCondition("NodeUnreachable", "SessionClosed") {
		t.Fatalf("node-a unreachable: %+v (want since %s)", sA, dsA.Add(commands.NoSessionAfter))
	}
	if s := sessionOf(ctx, pool, "node-b"); s.State != "connected" || !s.Connected || s.Epoch != sB1.Epoch {
		t.Fatalf("node-b moved while node-a was down: %+v", s)
	}
	phase("node-a unreachable at disconnect + 40 s exactly (sim)")
	nothingReleased("node-a unreachable")

	// Daemon A comes back with its state dir: a new session epoch supersedes
	// the old one, unreachable is cleared, nothing was released meanwhile.
	agentA.Start()
	waitFor(t, ctx, "node-a reconnected", 30*time.Second, func() (bool, error) {
		s := sessionOf(ctx, pool, "node-a")
		return s.Connected && s.State == "connected", nil
	})
	sA2 := sessionOf(ctx, pool, "node-a")
	if sA2.Epoch <= sA1.Epoch || slices.Contains(sA2.Reasons, "unreachable") || sA2.hasCondition("NodeUnreachable", "") ||
		sA2.Journal != sA1.Journal {
		t.Fatalf("node-a after restart: %+v (before: %+v)", sA2, sA1)
	}
	phase(fmt.Sprintf("node-a reconnected at epoch %d (was %d), same journal", sA2.Epoch, sA1.Epoch))

	// --- The edge gateway dies: node B's session ends when the gateway's
	// lease lapses (20 s after its last renewal), with the 120 s gateway
	// grace on top of the 40 s.
	var gwEpoch int64
	var gwExpires time.Time
	var gwOwner string
	edge.Kill()
	if err := pool.QueryRow(ctx, "SELECT owner, epoch, expires_at FROM leases WHERE name = $1", gateway.GatewayLeaseName("nodes-edge")).
		Scan(&gwOwner, &gwEpoch, &gwExpires); err != nil {
		t.Fatal(err)
	}
	if gwEpoch != sB1.GatewayEpoch {
		t.Fatalf("node-b opened under gateway epoch %d, lease at %d", sB1.GatewayEpoch, gwEpoch)
	}
	phase(fmt.Sprintf("gateway nodes-edge killed; lease epoch %d expires %s (sim now %s)", gwEpoch,
		gwExpires.Format(time.RFC3339Nano), sim.now(ctx).Format(time.RFC3339Nano)))
	// Still connected while the lease is valid, whatever the sweeps do.
	sim.advanceTo(ctx, gwExpires.Add(-time.Second))
	if s := sessionOf(ctx, pool, "node-b"); !s.Connected || s.State != "connected" {
		t.Fatalf("node-b before its gateway's lease lapsed: %+v", s)
	}
	// The next sweep after the lapse ends the session as of the lapse.
	sim.advanceTo(ctx, gwExpires.Add(commands.LivenessSweepEvery))
	sB := sessionOf(ctx, pool, "node-b")
	lastSeen := sB1.LastSeen
	if sB.LastSeen != nil {
		lastSeen = sB.LastSeen
	}
	wantDS := gwExpires
	if lastSeen != nil && lastSeen.After(wantDS) {
		wantDS = *lastSeen
	}
	if sB.Connected || sB.State != "disconnected" || sB.CloseReason != "gateway-lost" || sB.Grace != "gateway-lost" ||
		!sB.DisconnectedSince.Equal(wantDS) || sB.Epoch != sB1.Epoch {
		t.Fatalf("node-b after its gateway's lease lapsed: %+v (want disconnected since %s)", sB, wantDS)
	}
	dsB := sB.DisconnectedSince
	phase("node-b disconnected (gateway-lost) since " + dsB.Format(time.RFC3339Nano))
	nothingReleased("node-b disconnected")

	deadline := dsB.Add(commands.NoSessionAfter + commands.GatewayLostGrace)
	sim.advanceTo(ctx, dsB.Add(commands.NoSessionAfter+time.Second)) // past the plain 40 s: grace holds it
	if s := sessionOf(ctx, pool, "node-b"); s.State != "disconnected" || slices.Contains(s.Reasons, "unreachable") {
		t.Fatalf("node-b at 41 s after gateway loss: %+v", s)
	}
	sim.advanceTo(ctx, deadline.Add(-time.Second))
	if s := sessionOf(ctx, pool, "node-b"); s.State != "disconnected" || slices.Contains(s.Reasons, "unreachable") {
		t.Fatalf("node-b at 40+119 s after gateway loss: %+v", s)
	}
	// From the deadline on, simulated time moves in 1 s steps until the
	// transition. The node's reconciler was scheduled by the sweep that
	// detected the lapse, 40+120 s after that sweep rather than after the
	// lapse itself, so the sweep that runs every 5 s is what catches the
	// deadline: the transition may come up to one sweep period late, never
	// early.
	sim.advanceTo(ctx, deadline)
	for sessionOf(ctx, pool, "node-b").State != "unreachable" {
		if now := sim.now(ctx); !now.Before(deadline.Add(commands.LivenessSweepEvery)) {
			t.Fatalf("node-b still %+v at %s, a sweep period after its deadline %s", sessionOf(ctx, pool, "node-b"), now, deadline)
		}
		sim.advanceTo(ctx, sim.now(ctx).Add(time.Second))
	}
	sB = sessionOf(ctx, pool, "node-b")
	if !slices.Contains(sB.Reasons, "unreachable") || sB.UnreachableSince == nil || sB.UnreachableSince.Before(deadline) ||
		sB.UnreachableSince.After(deadline.Add(commands.LivenessSweepEvery)) || !sB.hasCondition("NodeUnreachable", "GatewayLost") {
		t.Fatalf("node-b unreachable: %+v (want since %s, at most %s later)", sB, deadline, commands.LivenessSweepEvery)
	}
	if s := sessionOf(ctx, pool, "node-a"); !s.Connected || s.State != "connected" || s.Epoch != sA2.Epoch {
		t.Fatalf("node-a moved meanwhile: %+v", s)
	}
	phase(fmt.Sprintf("node-b unreachable at gateway loss + 160 s + %s (sim)", sB.UnreachableSince.Sub(deadline)))
	nothingReleased("node-b unreachable")

	// The gateway comes back as a new process: it takes its lease over at a
	// new epoch, so it cannot inherit the dead process's sessions; daemon B
	// reconnects and supersedes its old session.
	if err := edge.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "node-b reconnected", 30*time.Second, func() (bool, error) {
		s := sessionOf(ctx, pool, "node-b")
		return s.Connected && s.State == "connected", nil
	})
	sB2 := sessionOf(ctx, pool, "node-b")
	if sB2.Epoch <= sB1.Epoch || sB2.GatewayEpoch <= gwEpoch || sB2.Gateway != "nodes-edge" ||
		slices.Contains(sB2.Reasons, "unreachable") || sB2.hasCondition("NodeUnreachable", "") {
		t.Fatalf("node-b after the gateway restart: %+v (before: %+v, old gateway epoch %d)", sB2, sB1, gwEpoch)
	}
	phase(fmt.Sprintf("node-b reconnected at session epoch %d (was %d) under gateway epoch %d (was %d)",
		sB2.Epoch, sB1.Epoch, sB2.GatewayEpoch, gwEpoch))
	nothingReleased("after reconnects")

	// Zombies. What the dead gateway process or a superseded session could
	// still try is refused by the epochs: the old gateway's liveness flush
	// is fenced by its lease epoch; a flush under the live lease but at
	// the old session epoch touches nothing; closing node A's first session
	// is superseded. Each is what the service itself would run.
	svc := commands.New(pool, commands.Config{})
	zombieGW := lease.Lease{Name: gateway.GatewayLeaseName("nodes-edge"), Owner: gwOwner, Epoch: gwEpoch}
	if _, err := svc.NodeSessions().RecordNodeLiveness(ctx, zombieGW, "nodes-edge", []commands.SeenAge{{NodeID: "node-b", Epoch: sB1.Epoch}}); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("flush by the dead gateway at lease epoch %d: %v, want ErrFenced", gwEpoch, err)
	}
	var live lease.Lease
	live.Name = gateway.GatewayLeaseName("nodes-edge")
	if err := pool.QueryRow(ctx, "SELECT owner, epoch FROM leases WHERE name = $1", live.Name).Scan(&live.Owner, &live.Epoch); err != nil {
		t.Fatal(err)
	}
	touched, err := svc.NodeSessions().RecordNodeLiveness(ctx, live, "nodes-edge", []commands.SeenAge{{NodeID: "node-b", Epoch: sB1.Epoch}})
	if err != nil || len(touched) != 0 {
		t.Fatalf("flush of node-b at its old session epoch %d: touched %v, err %v", sB1.Epoch, touched, err)
	}
	if err := svc.NodeSessions().CloseNodeSession(ctx, "node-a", sA1.Epoch, 0); !errors.Is(err, commands.ErrSessionSuperseded) {
		t.Fatalf("close of node-a's session at old epoch %d: %v, want ErrSessionSuperseded", sA1.Epoch, err)
	}
	for node, epoch := range map[string]int64{"node-a": sA2.Epoch, "node-b": sB2.Epoch} {
		if s := sessionOf(ctx, pool, node); !s.Connected || s.State != "connected" || s.Epoch != epoch {
			t.Fatalf("%s after the zombie writes: %+v", node, s)
		}
	}
	phase("zombie writes at old lease and session epochs refused")
	nothingReleased("end")

	// Every transition is one event, in order, and there is no other: no
	// node.lost (bare metal), nothing twice.
	want := []string{"node.registered", "node.joined", "node.connected", "node.disconnected", "node.unreachable", "node.connected"}
	for _, node := range []string{"node-a", "node-b"} {
		if got := nodeEvents(t, ctx, pool, node); !slices.Equal(got, want) {
			t.Fatalf("events of %s: %v, want %v", node, got, want)
		}
	}
	phase("done")
}

// simClock moves compute_sim_clock for the processes under test.
type simClock struct {
	t    *testing.T
	pool *pgxpool.Pool
}

func (c *simClock) now(ctx context.Context) time.Time {
	c.t.Helper()
	var ts time.Time
	if err := c.pool.QueryRow(ctx, "SELECT compute_now()").Scan(&ts); err != nil {
		c.t.Fatal(err)
	}
	return ts
}

// advanceTo moves the clock to target in steps of at most one sweep
// period. Each step extends the live leases of living processes by the
// step, as their renewals would have, and then waits until no liveness item
// (the sweep, a node's reconciler) is due any more. A process is living
// unless it is in exitedOwners, where every server of the harness goes by
// itself as it ends: the leases of a killed one lapse without the test
// saying so.
func (c *simClock) advanceTo(ctx context.Context, target time.Time) {
	c.t.Helper()
	for {
		now := c.now(ctx)
		if !now.Before(target) {
			return
		}
		step := min(target.Sub(now), commands.LivenessSweepEvery)
		dead := exitedOwners.list()
		err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
			secs := step.Seconds()
			if _, err := tx.Exec(ctx, "UPDATE compute_sim_clock SET ts = ts + make_interval(secs => $1) WHERE id = 1", secs); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE leases SET expires_at = expires_at + make_interval(secs => $1)
				WHERE expires_at > $2 AND NOT EXISTS (SELECT 1 FROM unnest($3::text[]) AS d WHERE starts_with(owner, d))`, secs, now, dead)
			return err
		})
		if err != nil {
			c.t.Fatal(err)
		}
		waitFor(c.t, ctx, "liveness items settled at "+now.Add(step).Format(time.RFC3339Nano), 10*time.Second, func() (bool, error) {
			var due bool
			err := c.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM work_queue
				WHERE kind IN ($1, $2) AND not_before <= compute_now())`, commands.KindNodeLiveness, commands.KindNodeLivenessSweep).Scan(&due)
			return !due, err
		})
	}
}

// agentProc is one `compute agent` process at a time, with a fixed node,
// gateway and state directory.
type agentProc struct {
	t         *testing.T
	args      []string
	tokenFile string
	logPath   string
	cmd       *exec.Cmd
	done      chan struct{}
}

func newAgent(t *testing.T, node, pool, joinToken, apiURL string, gw *server, extraArgs ...string) *agentProc {
	t.Helper()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "join-token")
	if err := os.WriteFile(tokenFile, []byte(joinToken), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &agentProc{t: t, tokenFile: tokenFile, logPath: filepath.Join(dir, "agent.log"), args: []string{"agent", "--node", node, "--pool", pool,
		"--join-token-file", tokenFile, "--fake-gpus", "2xH100-80GB", "--server", apiURL,
		"--gateway", "ws://" + gatewayAddr(t, gw), "--state-dir", filepath.Join(dir, "state")}}
	if !slices.Contains(extraArgs, "--workload-dir") {
		// Its own, not the machine's default: a killed daemon leaves its
		// allocations' directories, and their /work mounted.
		wl, err := os.MkdirTemp("", "compute-e2e-agent-")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(wl, 0o711); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(wl) })
		extraArgs = append(extraArgs, "--workload-dir", wl)
	}
	a.args = append(a.args, extraArgs...)
	t.Cleanup(func() {
		a.Kill()
		removeContainers(filepath.Join(a.stateDir(), "runc"))
		removeNetworks(t, a.stateDir())
		releaseUIDs(t, a.stateDir())
		// A runc the test's SIGKILLs cut short leaves the bind mount of its
		// own binary (runc.XXXXXX) in the container's state directory, which
		// then cannot be removed ("device or resource busy").
		testenv.UnmountUnder(a.stateDir())
		testenv.UnmountUnder(a.args[slices.Index(a.args, "--workload-dir")+1])
		if t.Failed() {
			t.Logf("agent %s log tail:\n%s", node, tail(a.logPath, 3000))
		}
	})
	return a
}

// removeContainers deletes every container a killed daemon left (its
// workloads outlive it by design; a test's must not outlive the test).
func removeContainers(runcRoot string) {
	out, err := exec.Command("runc", "--root", runcRoot, "list", "--quiet").Output()
	if err != nil {
		return
	}
	for _, id := range strings.Fields(string(out)) {
		_ = exec.Command("runc", "--root", runcRoot, "delete", "--force", id).Run()
	}
}

func (a *agentProc) Start() {
	a.t.Helper()
	logf, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		a.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(computeBinary(a.t), a.args...)
	cmd.Env = append(os.Environ(), "COMPUTE_LOG_LEVEL=info")
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: Kill takes the workloads it started with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		a.t.Fatal(err)
	}
	a.cmd, a.done = cmd, make(chan struct{})
	done := a.done
	go func() { _ = cmd.Wait(); close(done) }()
}

// stateDir is the daemon's --state-dir.
func (a *agentProc) stateDir() string { return a.args[slices.Index(a.args, "--state-dir")+1] }

// Kill SIGKILLs the daemon and everything in its process group.
func (a *agentProc) Kill() {
	if a.done == nil {
		return
	}
	select {
	case <-a.done:
		return
	default:
	}
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
	<-a.done
}

// gatewayAddr is the COMPUTE_GATEWAY_ADDR newServer picked.
func gatewayAddr(t *testing.T, s *server) string {
	t.Helper()
	for _, e := range s.env {
		if v, ok := strings.CutPrefix(e, "COMPUTE_GATEWAY_ADDR="); ok {
			return v
		}
	}
	t.Fatalf("%s has no gateway address", s.name)
	return ""
}

// nodeSession is a node's row and its session row, read with SQL.
type nodeSession struct {
	State             string
	Reasons           []string
	Conditions        []map[string]any
	Epoch             int64
	Gateway           string
	GatewayEpoch      int64
	Journal           string
	Connected         bool
	LastSeen          *time.Time
	CloseReason       string
	DisconnectedSince time.Time
	Grace             string
	UnreachableSince  *time.Time
}

func (s nodeSession) hasCondition(typ, reason string) bool {
	for _, c := range s.Conditions {
		if c["type"] == typ && c["status"] == true && (reason == "" || c["reason"] == reason) {
			return true
		}
	}
	return false
}

// sessionOf never fails the test (it runs inside polls); a read error
// leaves an empty state, which no check accepts.
func sessionOf(ctx context.Context, pool *pgxpool.Pool, node string) nodeSession {
	var s nodeSession
	var gw, journal, closeReason *string
	var gwEpoch *int64
	_ = pool.QueryRow(ctx, `SELECT n.state, n.no_schedule_reasons, n.conditions, s.session_epoch, s.gateway_id, s.gateway_epoch,
			s.journal_id::text, s.connected, s.last_seen_at, s.close_reason, s.disconnected_since, s.grace_reason, s.unreachable_since
		  FROM nodes n JOIN node_sessions s ON s.node_id = n.id WHERE n.id = $1`, node).
		Scan(&s.State, &s.Reasons, &s.Conditions, &s.Epoch, &gw, &gwEpoch, &journal, &s.Connected, &s.LastSeen,
			&closeReason, &s.DisconnectedSince, &s.Grace, &s.UnreachableSince)
	if gw != nil {
		s.Gateway = *gw
	}
	if gwEpoch != nil {
		s.GatewayEpoch = *gwEpoch
	}
	if journal != nil {
		s.Journal = *journal
	}
	if closeReason != nil {
		s.CloseReason = *closeReason
	}
	return s
}

// holdings is what a reservation holds: its live allocation and bookings.
type holdings struct {
	Reservation, State, Allocation, Node string
	Released                             bool
	Devices                              []string
	Bookings                             []string // device and range of each booking
}

func (h holdings) equalHold(o holdings) bool {
	return h.Allocation == o.Allocation && h.Node == o.Node && !h.Released && !o.Released &&
		slices.Equal(h.Devices, o.Devices) && slices.Equal(h.Bookings, o.Bookings) && len(h.Bookings) > 0
}

func holdingsOf(t *testing.T, ctx context.Context, pool *pgxpool.Pool, resID string) holdings {
	t.Helper()
	h := holdings{Reservation: resID}
	err := pool.QueryRow(ctx, `SELECT r.state, a.id, a.node_id, a.released_at IS NOT NULL, a.device_ids
		  FROM reservations r JOIN allocations a ON a.reservation_id = r.id WHERE r.id = $1`, resID).
		Scan(&h.State, &h.Allocation, &h.Node, &h.Released, &h.Devices)
	if err != nil {
		t.Fatalf("holdings of %s: %v", resID, err)
	}
	rows, err := pool.Query(ctx, `SELECT device_id || ' ' || during::text FROM device_bookings
		WHERE allocation_id = $1 ORDER BY id`, h.Allocation)
	if err != nil {
		t.Fatal(err)
	}
	h.Bookings, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// nodeEvents lists the node.* event types of one node in outbox order.
func nodeEvents(t *testing.T, ctx context.Context, pool *pgxpool.Pool, node string) []string {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT type FROM outbox WHERE type LIKE 'node.%' AND (subject = $1 OR subject LIKE '%/' || $1) ORDER BY seq`, node)
	if err != nil {
		t.Fatal(err)
	}
	types, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return types
}

// waitFor polls cond until it holds and fails the test otherwise.
func waitFor(t *testing.T, ctx context.Context, what string, deadline time.Duration, cond func() (bool, error)) {
	t.Helper()
	if err := pollUntil(ctx, deadline, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
