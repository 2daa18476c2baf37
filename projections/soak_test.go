package projections_test

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
)

const day = 24 * time.Hour

// quiet discards the pruner's and the worker's logs: a soak would print
// hundreds of lines.
var quiet = slog.New(slog.DiscardHandler)

// soakRetention is a production-like retention, shorter than the soak, so
// that every kind of history is pruned many times over while reservations
// that span the event retention are still live.
var soakRetention = commands.Retention{Events: 30 * day, Work: 7 * day, WebhookAttempts: 3 * day}

// soak is the projections fixture run for months of simulated time: the
// reservation reconcilers on a real work-queue worker, the pruner once a
// simulated day, and a random but seeded stream of commands.
type soak struct {
	*fixture
	rng    *rand.Rand
	worker *workqueue.Worker
	pruner *commands.Pruner
	// rebuilt is set once every projection was rebuilt from a log that
	// retention had pruned; they lack nothing, their rebuild starting from
	// the write model.
	rebuilt bool
	// counts of what happened, to show that the soak did something.
	counts map[string]int
	// daemons stand in for the nodes' daemons: each takes its node jobs
	// and reports them done, so that finished node jobs pile up for the
	// work retention.
	daemons []*soakDaemon
	// billing is the billing sink's dispatcher, and bills what its
	// endpoint received.
	billing *outbox.Dispatcher
	bills   *billingEndpoint
	// keyed is the last create sent with an idempotency key, which the
	// soak sends again: within the key's 24 h it answers the same
	// reservation, after them it books a new one.
	keyed *keyedCreate
	// hooks is acme's webhook endpoint and its receiver.
	hooks *soakHooks
	// startedAt is when the soak began, prevStepEnd when the previous
	// step ended.
	startedAt, prevStepEnd time.Time
}

// keyedCreate is a create sent with an idempotency key and what it got.
type keyedCreate struct {
	actor core.Actor
	cmd   commands.CreateReservation
	at    time.Time
	id    string
}

// TestSoakMonthsOfRetention drives about 120 simulated days, in steps of
// hours to days, of a small fleet (exclusive GPUs, MIG, time-slice) with
// its nodes' daemons taking their jobs, two tenants under GPU quotas (one
// of them preemptible), reservations created (some with an idempotency
// key sent again before and after it expires), extended, released,
// cancelled, preempted, activated and expired by the reconcilers (some
// outlive the event retention), cordons, taints and a GPU's mode changes,
// the billing sink, acme's webhook endpoint through two outages (the first
// long enough to disable it, each recovered), the pruner every simulated
// day and a rebuild of every projection once in the middle. After every step compute check's
// invariants hold, the usage windows bill what was held, the billing
// endpoint was sent what every ended allocation held, the webhook
// receiver got every retained event of its tenant, and the read models
// agree with the write model, the rebuilt ones included (the rebuilt
// reservations are the live ones, listed in the same order); after every
// prune, no history is left past its retention.
func TestSoakMonthsOfRetention(t *testing.T) {
	t.Parallel()
	s := setupSoak(t, 7)
	const length = 120 * day
	start := s.startedAt
	lastPrune := start
	for step := 0; ; step++ {
		now := s.d.Now(t)
		if now.Sub(start) >= length {
			break
		}
		s.weather(t, now.Sub(start).Hours()/24)
		for range s.rng.IntN(6) {
			s.act(t)
		}
		s.d.AdvanceSimClock(t, []time.Duration{3 * time.Hour, 9 * time.Hour, day, 36 * time.Hour, 2 * day,
			3 * day}[s.rng.IntN(6)]+time.Duration(s.rng.IntN(3_600_000_000))*time.Microsecond)
		s.runDue(t)
		s.runDaemons(t)
		s.catchUp(t)
		s.catchUpBilling(t)
		if now = s.d.Now(t); now.Sub(lastPrune) >= day {
			// Twice, as it runs every 10 minutes: a succeeded webhook
			// delivery goes in the run after the one that pruned its event.
			for range 2 {
				res, err := s.pruner.Prune(s.ctx, nil)
				require.NoError(t, err)
				s.counts["pruned events"] += int(res.Events)
				s.counts["pruned node jobs"] += int(res.NodeJobs)
				s.counts["pruned billing records"] += int(res.BillingDeliveries)
				s.counts["pruned webhook deliveries"] += int(res.WebhookDeliveries)
				s.counts["pruned webhook attempts"] += int(res.WebhookAttempts)
				s.counts["pruned fleet allocations"] += int(res.FleetAllocations)
			}
			lastPrune = now
			s.requireNothingOverdue(t, fmt.Sprintf("pruned on day %.1f", now.Sub(start).Hours()/24))
			s.requireHistoryBounded(t, fmt.Sprintf("pruned on day %.1f", now.Sub(start).Hours()/24))
		}
		if !s.rebuilt && now.Sub(start) >= length/2 {
			live, err := s.d.Q.RmReservationListAll(s.ctx)
			require.NoError(t, err)
			liveList := listReservations(t, s.fixture, 0, 0)
			for _, p := range projections.All() {
				_, err := projections.Rebuild(s.ctx, s.d.Pool, p.ID())
				require.NoError(t, err, p.ID())
			}
			got, err := s.d.Q.RmReservationListAll(s.ctx)
			require.NoError(t, err)
			exact := requireRebuiltReservations(t, s.fixture, live, liveList, got)
			require.Less(t, exact, len(live), "some reservations' creating events were pruned")
			s.rebuilt = true
		}
		s.check(t, fmt.Sprintf("step %d, day %.1f", step, now.Sub(start).Hours()/24))
		s.prevStepEnd = now
	}
	t.Logf("soak: %v", s.counts)
	require.Positive(t, s.counts["pruned events"])
	require.Positive(t, s.counts["expired"])
	require.Positive(t, s.counts["released"])
	require.Positive(t, s.counts["extended"])
	require.Positive(t, s.counts["cancelled"])
	require.Positive(t, s.counts["quota exceeded"])
	require.Positive(t, s.counts["pruned node jobs"])
	require.Positive(t, s.counts["pruned billing records"])
	require.Positive(t, s.counts["pruned webhook deliveries"])
	require.Positive(t, s.counts["pruned webhook attempts"])
	require.Positive(t, s.counts["idempotent replay"])
	require.Positive(t, s.counts["key expired"])
	require.Equal(t, 2, s.counts["webhook outages"])
	require.Equal(t, 1, s.counts["webhook endpoint disabled"], "the first outage outlasted the five days of failures")
	require.Positive(t, s.counts["webhooks recovered"])
	require.Positive(t, s.counts["webhooks checked"])
}

// setupSoak is the fleet, tenants, classes, daemons and sinks of the
// soak, and a worker of the reconcilers it needs (not node liveness: the
// daemons' sessions send no heartbeat, so their nodes would be
// unreachable after a minute), with the commands drawn from seed.
func setupSoak(t *testing.T, seed uint64) *soak {
	t.Helper()
	s := &soak{fixture: setup(t), rng: rand.New(rand.NewPCG(seed, seed)), counts: map[string]int{}}
	// The handlers' logs go nowhere either: the soak counts what happens.
	*s.h = *commands.New(s.d.Pool, commands.Config{Logger: quiet})
	s.node(t, "n1", exclusive, exclusive)
	s.node(t, "n2", mig, slots)
	s.node(t, "n3", exclusive, mig)
	for tenant, gpus := range map[string]int64{tenantA.Tenant: 5, tenantB.Tenant: 4} {
		_, err := s.h.SetQuota(s.ctx, operator, commands.SetQuota{Tenant: tenant, Resource: "gpu", Max: gpus})
		require.NoError(t, err)
	}
	// acme may preempt globex's batch work.
	for _, c := range []commands.CreatePriorityClass{{Name: "batch", Value: -10, Preemptible: true},
		{Name: "prod", Value: 100}} {
		_, err := s.h.CreatePriorityClass(s.ctx, operator, c)
		require.NoError(t, err)
	}
	for tenant, class := range map[string]string{tenantA.Tenant: "prod", tenantB.Tenant: "batch"} {
		_, err := s.h.SetTenantPriorityClasses(s.ctx, operator, commands.SetTenantPriorityClasses{Tenant: tenant,
			Classes: []string{class}})
		require.NoError(t, err)
	}
	gw := s.gatewayLease(t)
	for _, n := range []string{"n1", "n2", "n3"} {
		_, err := s.h.JoinNode(s.ctx, operator, n)
		require.NoError(t, err)
		ses, err := s.h.NodeSessions().OpenNodeSession(s.ctx, commands.OpenNodeSession{NodeID: n, Gateway: gw,
			GatewayID: "gw1", JournalID: "journal-" + n})
		require.NoError(t, err)
		// The daemon reports its inventory after its hello, holding
		// nothing: the session may be sent assigns from then on.
		_, err = s.h.NodeSessions().ReconcileNodeAssignments(s.ctx, n, ses.Epoch, nil)
		require.NoError(t, err)
		s.daemons = append(s.daemons, &soakDaemon{node: n, epoch: ses.Epoch})
	}
	s.setupBilling(t)
	s.pruner = &commands.Pruner{Pool: s.d.Pool, Retention: soakRetention, Logger: quiet}
	s.worker = workqueue.NewWorker(s.d.Pool, "soak", nil, quiet)
	s.worker.Concurrency = 1 // one item at a time: the run is the same every time
	all := s.h.Reconcilers().ByKind()
	for _, kind := range []string{commands.KindReservationPlace, commands.KindReservationQueue,
		commands.KindReservationActivate, commands.KindReservationExpire, commands.KindReservationResync,
		commands.KindNodeResync} {
		s.worker.Handle(kind, all[kind])
	}
	s.setupWebhooks(t)
	s.startedAt = s.d.Now(t)
	return s
}

// act runs one random command, as a tenant or the operator would. A
// refusal the command may give for a sound reason (quota, a conflict with
// another booking, a state it just left) is counted, anything else fails.
func (s *soak) act(t *testing.T) {
	t.Helper()
	now := s.d.Now(t)
	actor := []core.Actor{tenantA, tenantB}[s.rng.IntN(2)]
	var err error
	var what string
	switch s.rng.IntN(10) {
	case 0, 1, 2, 3:
		what = "created"
		cmd := []commands.CreateReservation{
			{GPUs: 1, VCPU: 4, MemoryMB: 2048},
			{GPUs: 2, DiskGB: 20},
			{GPUs: 1, MIGProfile: "3g.40gb"},
			{GPUs: 2, SlotKind: core.GPUTimeSlice, VCPU: 2},
			{VCPU: 8, MemoryMB: 4096, DiskGB: 5},
		}[s.rng.IntN(5)]
		cmd.PoolID = "fra1-gpu"
		cmd.Start = now
		if s.rng.IntN(3) == 0 {
			cmd.Start = now.Add(time.Duration(s.rng.IntN(72)) * time.Hour)
		}
		// Some outlive the event retention: their booking is pruned
		// while they still hold their devices.
		cmd.End = cmd.Start.Add([]time.Duration{4 * time.Hour, day, 5 * day, 20 * day, 45 * day}[s.rng.IntN(5)])
		if actor == tenantB || s.rng.IntN(2) == 0 {
			cmd.PriorityClass = map[string]string{tenantA.Tenant: "prod", tenantB.Tenant: "batch"}[actor.Tenant]
		}
		if s.keyed != nil && s.rng.IntN(3) == 0 {
			s.replayKeyed(t)
			return
		}
		if s.rng.IntN(3) == 0 {
			cmd.IdempotencyKey = fmt.Sprintf("soak-%d", s.rng.Uint64())
		}
		var res commands.ReservationResult
		res, err = s.h.CreateReservation(s.ctx, actor, cmd)
		if err == nil && cmd.IdempotencyKey != "" {
			s.keyed = &keyedCreate{actor: actor, cmd: cmd, at: now, id: res.Reservation.ID}
		}
	case 4, 5:
		what = "extended"
		r, ok := s.pick(t, actor, "booked", "active")
		if !ok {
			return
		}
		// Within the longest window a reservation may have.
		newEnd := r.end.Add(time.Duration(1+s.rng.IntN(240)) * time.Hour)
		if longest := r.start.Add(commands.DefaultMaxReservationLength); newEnd.After(longest) {
			newEnd = longest
		}
		if !newEnd.After(r.end) {
			return
		}
		_, err = s.h.ExtendReservation(s.ctx, actor, commands.ExtendReservation{ReservationID: r.id, NewEnd: newEnd})
	case 6:
		what = "released"
		r, ok := s.pick(t, actor, "booked", "active")
		if !ok {
			return
		}
		_, err = s.h.ReleaseReservation(s.ctx, actor, commands.ReleaseReservation{ReservationID: r.id})
	case 7:
		what = "cancelled"
		r, ok := s.pick(t, actor, "pending", "booked")
		if !ok {
			return
		}
		_, err = s.h.CancelReservation(s.ctx, actor, commands.CancelReservation{ReservationID: r.id})
	case 8:
		node := []string{"n1", "n2", "n3"}[s.rng.IntN(3)]
		switch s.rng.IntN(6) {
		case 0, 1:
			what = "cordoned"
			_, err = s.h.CordonNode(s.ctx, operator, commands.CordonNode{NodeID: node})
		case 2, 3:
			what = "uncordoned"
			_, err = s.h.UncordonNode(s.ctx, operator, commands.CordonNode{NodeID: node})
		case 4:
			what = "tainted"
			_, err = s.h.TaintNode(s.ctx, operator, commands.TaintNode{NodeID: node, Taint: "maintenance"})
		case 5:
			what = "untainted"
			_, err = s.h.UntaintNode(s.ctx, operator, commands.TaintNode{NodeID: node, Taint: "maintenance"})
		}
	case 9:
		if s.rng.IntN(4) > 0 {
			what = "quiet" // nothing happens: time passes
			break
		}
		// The MIG GPU of n3 changes layout, when nothing holds it.
		what = "GPU mode changed"
		layout := mig
		if s.rng.IntN(2) == 0 {
			layout = slots
		}
		_, err = s.h.SetGPUMode(s.ctx, operator, commands.SetGPUMode{GPUID: "GPU-n3-1", Layout: layout})
	}
	switch {
	case err == nil:
		s.counts[what]++
	case core.CodeOf(err) == core.CodeQuotaExceeded:
		s.counts["quota exceeded"]++
	case core.CodeOf(err) == core.CodeConflict:
		s.counts[what+": conflict"]++
	default:
		require.NoError(t, err, what)
	}
}

// replayKeyed sends the last keyed create again: within its key's 24 h
// it is answered the reservation it made, after them it books anew.
func (s *soak) replayKeyed(t *testing.T) {
	t.Helper()
	k := s.keyed
	res, err := s.h.CreateReservation(s.ctx, k.actor, k.cmd)
	if s.d.Now(t).Sub(k.at) < 24*time.Hour {
		require.NoError(t, err, "replay of key %s", k.cmd.IdempotencyKey)
		require.Equal(t, k.id, res.Reservation.ID, "replay of key %s", k.cmd.IdempotencyKey)
		s.counts["idempotent replay"]++
		return
	}
	s.keyed = nil
	if err != nil {
		require.Contains(t, []core.Code{core.CodeQuotaExceeded, core.CodeConflict, core.CodeInvalidArgument},
			core.CodeOf(err), "create with expired key %s: %v", k.cmd.IdempotencyKey, err)
		return
	}
	require.NotEqual(t, k.id, res.Reservation.ID, "key %s expired: a new reservation", k.cmd.IdempotencyKey)
	s.counts["key expired"]++
}

// picked is a reservation pick chose.
type picked struct {
	id         string
	start, end time.Time
}

// pick chooses one of the actor's reservations in one of the states, from
// the write model in id order (so the seed decides which).
func (s *soak) pick(t *testing.T, actor core.Actor, states ...string) (picked, bool) {
	t.Helper()
	rows, err := s.d.Pool.Query(s.ctx, `SELECT id, lower(during), upper(during) FROM reservations
		WHERE tenant_id = $1 AND state = ANY($2) ORDER BY id`, actor.Tenant, states)
	require.NoError(t, err)
	defer rows.Close()
	var all []picked
	for rows.Next() {
		var p picked
		require.NoError(t, rows.Scan(&p.id, &p.start, &p.end))
		all = append(all, p)
	}
	require.NoError(t, rows.Err())
	if len(all) == 0 {
		return picked{}, false
	}
	return all[s.rng.IntN(len(all))], true
}

// runDue runs every work item that is due, as a worker would, until none
// is left, and fails on any item that failed.
func (s *soak) runDue(t *testing.T) {
	t.Helper()
	for range 100 {
		n, err := s.worker.RunOnce(s.ctx)
		require.NoError(t, err)
		if n == 0 {
			break
		}
		s.counts["work items"] += n
	}
	var failed []string
	rows, err := s.d.Pool.Query(s.ctx, `SELECT kind || ' ' || key || ': ' || last_error FROM work_queue
		WHERE last_error IS NOT NULL ORDER BY kind, key`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var f string
		require.NoError(t, rows.Scan(&f))
		failed = append(failed, f)
	}
	require.NoError(t, rows.Err())
	require.Empty(t, failed, "failed work items")
	var expired, preempted int
	require.NoError(t, s.d.Pool.QueryRow(s.ctx, `SELECT count(*) FILTER (WHERE state = 'expired'),
		count(*) FILTER (WHERE state = 'preempted') FROM reservations`).Scan(&expired, &preempted))
	s.counts["expired"], s.counts["preempted"] = expired, preempted
}
