package commands_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/billing"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/webhook"
	"github.com/bettercompute/compute/wire"
)

// growthFleet is the growth measurement's world beside the handlers, as
// `compute serve` runs it: one worker with every reconciler, the pruner
// and the webhook deliveries; the projections and the webhook scheduler
// and the billing sink as outbox sinks; and two nodes whose stand-in daemons keep a session
// through gateway gw1 (renewed and flushed at every step, as a gateway
// does every few seconds), take their node jobs and report them done.
// acme's webhook endpoint answers; globex's never does, so it is disabled
// after five days of failures, and re-enabled and recovered every week.
type growthFleet struct {
	*fixture
	worker  *workqueue.Worker
	sinks   []*outbox.Dispatcher
	hooks   *webhook.Service
	daemons []*growthDaemon
	// globexHook is the endpoint that never answers.
	globexHook string
}

// growthDaemon is a node's daemon: its session, its credential, and what
// it holds (allocations by the assigns it carried out, instances it runs).
type growthDaemon struct {
	node, credential string
	epoch            int64
	held             map[string]time.Time
	running          map[string]bool
	// away is a daemon whose machine is off: no session, no liveness.
	// awayJob is the job sent to it meanwhile.
	away    bool
	awayJob string
}

// growthGateway is the gateway every daemon's session goes through.
const growthGateway = "gw1"

var quietLog = slog.New(slog.DiscardHandler)

// growthReceiver is the webhook and billing receivers, in process:
// acme's host and the billing endpoint answer 204, every other host 503.
type growthReceiver struct{}

func (growthReceiver) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	status := http.StatusServiceUnavailable
	if req.URL.Host == "hooks.acme.example" || req.URL.Host == "billing.example" {
		status = http.StatusNoContent
	}
	return &http.Response{StatusCode: status, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

// setupGrowthFleet gives f priority classes (acme may preempt globex's
// batch work), two nodes with their daemons connected, both tenants'
// webhook endpoints and the background roles, with p as the pruner.
func setupGrowthFleet(t *testing.T, f *fixture, p *commands.Pruner) *growthFleet {
	t.Helper()
	// The handlers log to nowhere, as everything else here: what the run
	// checks, it reads from the tables.
	f.h = commands.New(f.d.Pool, commands.Config{Logger: quietLog})
	g := &growthFleet{fixture: f}
	f.classes(t)
	_, err := f.h.SetTenantPriorityClasses(f.ctx, operator, commands.SetTenantPriorityClasses{Tenant: "globex",
		Classes: []string{"batch"}})
	require.NoError(t, err)
	_, err = f.h.SetTenantFairShare(f.ctx, operator, commands.SetTenantFairShare{Tenant: "acme", Share: 3})
	require.NoError(t, err)
	for _, n := range []string{"n1", "n2"} {
		f.node(t, n, exclusive, exclusive)
		cred, err := f.h.JoinNode(f.ctx, operator, n)
		require.NoError(t, err)
		d := &growthDaemon{node: n, credential: cred.ID, held: map[string]time.Time{}, running: map[string]bool{}}
		g.open(t, d)
		g.daemons = append(g.daemons, d)
	}
	for _, ensure := range []func() error{
		func() error { return p.EnsureRetentionPrune(f.ctx) },
		func() error { return f.h.EnsureNodeLivenessSweep(f.ctx) },
		func() error { return f.h.EnsureReservationResync(f.ctx) },
		func() error { return f.h.EnsureFairShareFold(f.ctx) },
	} {
		require.NoError(t, ensure())
	}
	g.hooks = webhook.New(f.d.Pool, f.h, webhook.Config{AllowPrivate: true, Client: &http.Client{Transport: growthReceiver{}},
		SlotWait: -1, Rand: func() float64 { return 0.5 }}, quietLog)
	_, err = g.hooks.CreateEndpoint(f.ctx, tenantA, webhook.CreateEndpoint{URL: "https://hooks.acme.example/compute"})
	require.NoError(t, err)
	ep, err := g.hooks.CreateEndpoint(f.ctx, tenantB, webhook.CreateEndpoint{URL: "https://hooks.globex.example/compute"})
	require.NoError(t, err)
	g.globexHook = ep.ID

	// The worker role as `compute serve` wires it (registerReconcilers and
	// the delivery pool). The dispatch item finds no gateway in this
	// process: the daemons' own poll (drain) sends, as another process's
	// gateway would.
	g.worker = workqueue.NewWorker(f.d.Pool, "worker", clock.New(quietLog), quietLog)
	for kind, handle := range f.h.Reconcilers().ByKind() {
		g.worker.Handle(kind, handle)
	}
	g.worker.Handle(commands.KindNodeJobDispatch, func(ctx context.Context, it workqueue.Item) error { return nil })
	g.worker.Handle(commands.KindRetentionPrune, p.HandleRetentionPrune)
	g.worker.Handle(webhook.KindDeliver, g.hooks.Deliver)
	g.worker.HandlePrefetch(webhook.KindDeliver, g.hooks.Prefetch)
	var applied []outbox.TxSink
	for _, pr := range projections.All() {
		applied = append(applied, pr)
	}
	bills, err := billing.New(f.d.Pool, billing.Config{URL: "https://billing.example/usage", Secret: webhook.NewSecret(),
		Client: &http.Client{Transport: growthReceiver{}}}, quietLog)
	require.NoError(t, err)
	// The billing sink after the projections: it sends the usage windows
	// they closed.
	g.sinks = []*outbox.Dispatcher{outbox.NewTxGroup(f.d.Pool, "dispatcher", applied, quietLog),
		outbox.NewTxDispatcher(f.d.Pool, "dispatcher", g.hooks.Scheduler(), quietLog),
		outbox.NewDispatcher(f.d.Pool, "dispatcher", bills, quietLog)}
	return g
}

// gateway takes or renews gw1's lease (same owner: same epoch).
func (g *growthFleet) gateway(t *testing.T) lease.Lease {
	t.Helper()
	gw, err := lease.Acquire(g.ctx, g.d.Q, "gateway:"+growthGateway, "gw1-process", lease.GatewayTTL)
	require.NoError(t, err)
	return gw
}

// open opens d's session with its credential and reports what it holds,
// as a daemon does right after its hello.
func (g *growthFleet) open(t *testing.T, d *growthDaemon) {
	t.Helper()
	var observed int64
	if s, err := g.d.Q.NodeSessionGet(g.ctx, d.node); err == nil {
		observed = s.ObservedGeneration
	}
	s, err := g.h.NodeSessions().OpenNodeSession(g.ctx, commands.OpenNodeSession{NodeID: d.node, Gateway: g.gateway(t),
		GatewayID: growthGateway, JournalID: "j-" + d.node, ObservedGeneration: observed, CredentialID: d.credential})
	require.NoError(t, err)
	d.epoch = s.Epoch
	var held []commands.ReportedAssignment
	for _, id := range slices.Sorted(maps.Keys(d.held)) {
		held = append(held, commands.ReportedAssignment{AllocationID: id, End: d.held[id]})
	}
	_, err = g.h.NodeSessions().ReconcileNodeAssignments(g.ctx, d.node, d.epoch, held)
	require.NoError(t, err)
	stopped, err := g.h.NodeSessions().ReconcileNodeInstances(g.ctx, d.node, d.epoch, slices.Sorted(maps.Keys(d.running)))
	require.NoError(t, err)
	for _, id := range stopped {
		delete(d.running, id)
	}
}

// reconnect is a daemon's connection dropped and made again (a gateway
// restart, a network blip): the session closes and the next one opens.
func (g *growthFleet) reconnect(t *testing.T, d *growthDaemon) {
	t.Helper()
	require.NoError(t, g.h.NodeSessions().CloseNodeSession(g.ctx, d.node, d.epoch, 0))
	g.open(t, d)
}

// rejoin is an operator's join token used by the daemon: a new
// credential, the old one superseded with its grace, a new session.
func (g *growthFleet) rejoin(t *testing.T, d *growthDaemon) {
	t.Helper()
	jt, err := g.h.CreateJoinToken(g.ctx, operator, d.node, time.Hour)
	require.NoError(t, err)
	cred, err := g.h.JoinNodeWithToken(g.ctx, jt.Token, d.node)
	require.NoError(t, err)
	d.credential = cred.ID
	g.reconnect(t, d)
}

// leave is d's machine switched off: its connection ends, and an operator
// asks it to run something it will never get in time (the job times out
// once the node has been away an hour).
func (g *growthFleet) leave(t *testing.T, d *growthDaemon, day int) {
	t.Helper()
	require.NoError(t, g.h.NodeSessions().CloseNodeSession(g.ctx, d.node, d.epoch, 0))
	d.away = true
	res, err := g.h.RunNodeCommand(g.ctx, operator, commands.RunNodeCommand{NodeID: d.node, IdempotencyKey: fmt.Sprintf("away-%d", day),
		Kind: core.NodeCommandExec, Payload: core.NodeCommandPayload{Script: "nvidia-smi -q"}})
	require.NoError(t, err)
	d.awayJob = res.Command.ID
}

// comeBack is d's machine on again, after the job sent to it timed out:
// its daemon connects.
func (g *growthFleet) comeBack(t *testing.T, d *growthDaemon) {
	t.Helper()
	job, err := g.h.GetNodeCommand(g.ctx, operator, d.awayJob)
	require.NoError(t, err)
	require.Equal(t, core.CommandTimedOut, job.State, "a job of a node away for hours")
	d.away = false
	g.open(t, d)
}

// alive is what ran every few seconds while the clock stepped: the
// gateway's liveness flush (the lease renewed, every daemon that is not
// away heard from just now) and the liveness sweeps, whose heartbeat is
// moved to now (without it the next sweep would take the step for an
// outage of the control plane and restart every absent node's clock).
func (g *growthFleet) alive(t *testing.T) {
	t.Helper()
	var seen []commands.SeenAge
	for _, d := range g.daemons {
		if !d.away {
			seen = append(seen, commands.SeenAge{NodeID: d.node, Epoch: d.epoch})
		}
	}
	_, err := g.h.NodeSessions().RecordNodeLiveness(g.ctx, g.gateway(t), growthGateway, seen)
	require.NoError(t, err)
	_, err = g.d.Pool.Exec(g.ctx, "UPDATE node_liveness_sweeps SET last_sweep_at = compute_now()")
	require.NoError(t, err)
}

// drain has each daemon take its node jobs and report them succeeded, with
// the generation they bring, until none is left to send. It says how many
// jobs it reported.
func (g *growthFleet) drain(t *testing.T) int {
	t.Helper()
	gw := g.gateway(t)
	n := 0
	for _, d := range g.daemons {
		if d.away {
			continue
		}
		for range 20 {
			rep, err := g.h.NodeSessions().DispatchNodeJobs(g.ctx, gw, d.node, d.epoch)
			require.NoError(t, err, d.node)
			if len(rep.ToSend) == 0 {
				break
			}
			for _, j := range rep.ToSend {
				var generation *int64
				var instance *string
				require.NoError(t, g.d.Pool.QueryRow(g.ctx, "SELECT generation, instance_id FROM node_commands WHERE id = $1",
					j.ID).Scan(&generation, &instance))
				var observed int64
				if generation != nil {
					observed = *generation
				}
				require.NoError(t, g.h.NodeSessions().RecordNodeJobResult(g.ctx, commands.RecordNodeJobResult{
					NodeID: d.node, Epoch: d.epoch, JobID: j.ID, State: "succeeded", ObservedGeneration: observed}), d.node)
				n++
				switch j.Kind {
				case core.NodeCommandAssign:
					var p wire.AssignPayload
					require.NoError(t, json.Unmarshal(j.Payload, &p))
					d.held[j.AllocationID] = p.End
				case core.NodeCommandUnassign:
					delete(d.held, j.AllocationID)
				case core.NodeCommandInstanceStart:
					d.running[*instance] = true
				case core.NodeCommandInstanceStop:
					delete(d.running, *instance)
				}
			}
		}
	}
	return n
}

// settle runs the worker, the sinks and the daemons until none has
// anything left to do.
func (g *growthFleet) settle(t *testing.T) {
	t.Helper()
	for range 200 {
		n, err := g.worker.RunOnce(g.ctx)
		require.NoError(t, err)
		for _, s := range g.sinks {
			m, err := s.RunOnce(g.ctx)
			require.NoError(t, err)
			n += m
		}
		if n+g.drain(t) == 0 {
			return
		}
	}
	t.Fatal("the fleet did not settle in 200 rounds")
}

// daemonOf is the daemon of node.
func (g *growthFleet) daemonOf(node string) *growthDaemon {
	for _, d := range g.daemons {
		if d.node == node {
			return d
		}
	}
	return nil
}

// priorityHour is an hour of preemption and instances, with the fleet
// free at its start: globex's batch work fills both nodes; an acme prod
// reservation starting now preempts one of them, runs two instances (one
// stopped by acme, one exiting on its own) and an exec; another, starting
// in half an hour, cuts the other back; and a batch request that finds no
// room waits in the line until its window passes. Everything has ended
// an hour later.
func (g *growthFleet) priorityHour(t *testing.T, day int) {
	t.Helper()
	now := g.d.Now(t)
	for range 2 {
		r := g.reserve(t, tenantB, commands.CreateReservation{GPUs: 2, Start: now, End: now.Add(55 * time.Minute),
			PriorityClass: "batch"})
		require.Equal(t, core.ReservationBooked, r.Reservation.State)
	}
	g.settle(t) // both active on their nodes
	prod := g.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, Start: now, End: now.Add(55 * time.Minute),
		PriorityClass: "prod", IdempotencyKey: fmt.Sprintf("prod-%d", day)})
	require.Equal(t, core.ReservationBooked, prod.Reservation.State)
	later := g.reserve(t, tenantA, commands.CreateReservation{GPUs: 2, Start: now.Add(30 * time.Minute),
		End: now.Add(55 * time.Minute), PriorityClass: "prod"})
	require.Equal(t, core.ReservationBooked, later.Reservation.State)
	waits, err := g.h.CreateReservation(g.ctx, tenantB, commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 2,
		Start: now.Add(5 * time.Minute), End: now.Add(50 * time.Minute), PriorityClass: "batch"})
	require.NoError(t, err)
	require.Equal(t, core.ReservationPending, waits.Reservation.State)
	g.settle(t)

	var node string
	require.NoError(t, g.d.Pool.QueryRow(g.ctx, "SELECT node_id FROM allocations WHERE reservation_id = $1",
		prod.Reservation.ID).Scan(&node))
	var ids []string
	for range 2 {
		res, err := g.h.CreateInstance(g.ctx, tenantA, commands.CreateInstance{ReservationID: prod.Reservation.ID})
		require.NoError(t, err)
		ids = append(ids, res.Instance.ID)
	}
	_, err = g.h.RunNodeCommand(g.ctx, tenantA, commands.RunNodeCommand{NodeID: node, AllocationID: g.allocationOf(t, prod.Reservation.ID),
		IdempotencyKey: fmt.Sprintf("smi-%d", day), Kind: core.NodeCommandExec, Payload: core.NodeCommandPayload{Script: "nvidia-smi -L"}})
	require.NoError(t, err)
	g.settle(t)
	g.d.AdvanceSimClock(t, 10*time.Minute)
	g.alive(t)
	_, err = g.h.DeleteInstance(g.ctx, tenantA, ids[0])
	require.NoError(t, err)
	d := g.daemonOf(node)
	code := int32(0)
	_, err = g.h.NodeSessions().RecordInstanceStopped(g.ctx, commands.RecordInstanceStopped{NodeID: node, Epoch: d.epoch,
		InstanceID: ids[1], Exited: true, ExitCode: &code})
	require.NoError(t, err)
	delete(d.running, ids[1])
	g.settle(t)
}

// recoverGlobex is globex's weekly look at its endpoint: re-enabled if
// failing disabled it, and the last two days recovered.
func (g *growthFleet) recoverGlobex(t *testing.T) {
	t.Helper()
	ep, err := g.hooks.GetEndpoint(g.ctx, tenantB, g.globexHook)
	require.NoError(t, err)
	if !ep.Enabled {
		enabled := true
		_, err = g.hooks.PatchEndpoint(g.ctx, tenantB, g.globexHook, webhook.PatchEndpoint{Enabled: &enabled})
		require.NoError(t, err)
	}
	_, err = g.hooks.RecoverEndpoint(g.ctx, tenantB, g.globexHook, g.d.Now(t).Add(-48*time.Hour))
	require.NoError(t, err)
	g.settle(t)
}
