package main

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/workqueue"
)

// stallAfterClaim is a pgx tracer that runs takeover once, right after the
// first work-queue claim through its pool that took a row: the worker
// stalls between its claim and its handlers (a GC pause, a stopped VM)
// while the test lets its shard leases lapse and another process take
// them. The handlers then run with the leases they were claimed under.
type stallAfterClaim struct {
	once     sync.Once
	takeover func()
}

type claimQuery struct{}

func (s *stallAfterClaim) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, "name: WorkQueueClaim ") {
		return context.WithValue(ctx, claimQuery{}, true)
	}
	return ctx
}

func (s *stallAfterClaim) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	if ctx.Value(claimQuery{}) != nil && data.Err == nil && data.CommandTag.RowsAffected() > 0 {
		s.once.Do(s.takeover)
	}
}

// fencedFixture is a database with the seeded fleet, a zombie reconciler
// worker wired as serve wires it, which stalls after its first claim while
// "heir" takes every shard, and the heir's own reconciler worker.
type fencedFixture struct {
	ctx          context.Context
	d            *pgtest.DB
	svc          services
	zombie, heir *workqueue.Worker
}

func newFencedFixture(t *testing.T, nodesWithoutDaemons bool) *fencedFixture {
	t.Helper()
	ctx := context.Background()
	d := pgtest.New(t)
	logger := slog.New(slog.DiscardHandler)
	cfg, err := config.Load()
	require.NoError(t, err)
	cfg.NodesWithoutDaemons = nodesWithoutDaemons

	shards := make([]string, workqueue.NumShards)
	for i := range shards {
		shards[i] = workqueue.ShardLeaseName(int32(i))
	}
	stall := &stallAfterClaim{takeover: func() {
		d.AdvanceSimClock(t, lease.TTL+time.Second)
		held, err := lease.AcquireMany(ctx, d.Q, shards, "heir", lease.TTL)
		require.NoError(t, err)
		require.Len(t, held, workqueue.NumShards, "the heir takes every lapsed shard")
	}}
	pcfg, err := pgxpool.ParseConfig(d.URL)
	require.NoError(t, err)
	pcfg.ConnConfig.Tracer = stall
	zombiePool, err := pgxpool.NewWithConfig(ctx, pcfg)
	require.NoError(t, err)
	t.Cleanup(zombiePool.Close)

	f := &fencedFixture{ctx: ctx, d: d, svc: newServices(d.Pool, cfg, logger, nil)}
	f.zombie = workqueue.NewWorker(zombiePool, "zombie", nil, logger)
	registerReconcilers(f.zombie, newServices(zombiePool, cfg, logger, nil))
	f.heir = workqueue.NewWorker(d.Pool, "heir", nil, logger)
	f.heir.Concurrency = 1 // activation and expiry of one reservation one after the other
	registerReconcilers(f.heir, f.svc)
	commandstest.Seed(t, d, f.svc.handlers, 2)
	return f
}

// reservation is the state and version of a reservation row.
func (f *fencedFixture) reservation(t *testing.T, id string) (core.State, int64) {
	t.Helper()
	r, err := f.d.Q.ReservationGet(f.ctx, id)
	require.NoError(t, err)
	return core.State(r.State), r.Version
}

// Reservation reconcilers run under the shard lease their item was claimed
// under: a worker whose lease was taken over while it stalled after its
// claim cannot place, activate or expire a reservation; the worker that
// took the shard over does. The wiring used to drop the item's lease, so
// the zombie's writes committed.
func TestFencedReservationReconcilers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind string
		// prepare makes the kind's item due and returns the reservation.
		prepare func(t *testing.T, f *fencedFixture) string
		want    core.State
	}{
		{kind: commands.KindReservationQueue, want: core.ReservationBooked,
			prepare: func(t *testing.T, f *fencedFixture) string {
				now := f.d.Now(t)
				res, err := f.svc.handlers.CreateReservation(f.ctx, commandstest.TenantA, commands.CreateReservation{
					PoolID: commandstest.Pool, GPUs: 1, Start: now, End: now.Add(2 * time.Hour)})
				require.NoError(t, err)
				require.Equal(t, core.ReservationPending, res.Reservation.State, "no node yet")
				commandstest.Node(t, f.svc.handlers, "n1", core.GPULayout{Mode: core.GPUExclusive})
				f.d.AdvanceSimClock(t, commands.DefaultPendingRetryInterval) // the pool's line comes due
				return res.Reservation.ID
			}},
		{kind: commands.KindReservationActivate, want: core.ReservationActive,
			prepare: func(t *testing.T, f *fencedFixture) string {
				commandstest.Node(t, f.svc.handlers, "n1", core.GPULayout{Mode: core.GPUExclusive})
				now := f.d.Now(t)
				res, err := f.svc.handlers.CreateReservation(f.ctx, commandstest.TenantA, commands.CreateReservation{
					PoolID: commandstest.Pool, GPUs: 1, Start: now, End: now.Add(2 * time.Hour)})
				require.NoError(t, err)
				require.Equal(t, core.ReservationBooked, res.Reservation.State)
				return res.Reservation.ID
			}},
		{kind: commands.KindReservationExpire, want: core.ReservationExpired,
			prepare: func(t *testing.T, f *fencedFixture) string {
				commandstest.Node(t, f.svc.handlers, "n1", core.GPULayout{Mode: core.GPUExclusive})
				now := f.d.Now(t)
				res, err := f.svc.handlers.CreateReservation(f.ctx, commandstest.TenantA, commands.CreateReservation{
					PoolID: commandstest.Pool, GPUs: 1, Start: now, End: now.Add(time.Hour)})
				require.NoError(t, err)
				// Its activation arms the expiry.
				require.NoError(t, commandstest.Activate(f.ctx, f.svc.handlers, res.Reservation.ID))
				f.d.AdvanceSimClock(t, time.Hour) // the window ended
				return res.Reservation.ID
			}},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			f := newFencedFixture(t, true)
			id := tc.prepare(t, f)
			state, version := f.reservation(t, id)

			n, err := f.zombie.RunOnce(f.ctx)
			require.NoError(t, err)
			require.Positive(t, n, "the zombie claimed the due items before it stalled")
			gotState, gotVersion := f.reservation(t, id)
			require.Equal(t, state, gotState, "a worker whose shard lease was taken over changed the reservation")
			require.Equal(t, version, gotVersion, "a worker whose shard lease was taken over wrote the reservation")

			_, err = f.heir.RunOnce(f.ctx)
			require.NoError(t, err)
			gotState, _ = f.reservation(t, id)
			require.Equal(t, tc.want, gotState, "the worker holding the shard runs the item")
		})
	}
}

// The liveness sweep writes only under its shard lease: a zombie sweep
// neither moves the controller heartbeat nor declares a node unreachable;
// the worker that took the shard over does both. The wiring used to drop
// the item's lease and the sweep ran unfenced.
func TestFencedLivenessSweep(t *testing.T) {
	t.Parallel()
	f := newFencedFixture(t, false)
	commandstest.Node(t, f.svc.handlers, "n1", core.GPULayout{Mode: core.GPUExclusive}) // registered, never joins
	f.d.AdvanceSimClock(t, commands.NoSessionAfter-lease.TTL)                           // the takeover passes the 40 s
	require.NoError(t, f.svc.handlers.EnsureNodeLivenessSweep(f.ctx))

	nodeState := func() core.State {
		var s string
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT state FROM nodes WHERE id = 'n1'").Scan(&s))
		return core.State(s)
	}
	sweeps := func() int {
		var n int
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM node_liveness_sweeps").Scan(&n))
		return n
	}
	n, err := f.zombie.RunOnce(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the zombie claimed the sweep (the node's own item is not due yet)")
	require.Zero(t, sweeps(), "a zombie sweep moved the controller heartbeat")
	require.Equal(t, core.NodeRegistered, nodeState(), "a zombie sweep judged a node")

	_, err = f.heir.RunOnce(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, sweeps(), "the heir's sweep moves the heartbeat")
	require.Equal(t, core.NodeUnreachable, nodeState(), "and declares the silent node unreachable")
}

// The reservation resync puts lost reconciler rows back only under its
// shard lease: a zombie's resync queues nothing, the heir's does.
func TestFencedReservationResync(t *testing.T) {
	t.Parallel()
	f := newFencedFixture(t, true)
	commandstest.Node(t, f.svc.handlers, "n1", core.GPULayout{Mode: core.GPUExclusive})
	now := f.d.Now(t)
	res, err := f.svc.handlers.CreateReservation(f.ctx, commandstest.TenantA, commands.CreateReservation{
		PoolID: commandstest.Pool, GPUs: 1, Start: now.Add(time.Hour), End: now.Add(2 * time.Hour)})
	require.NoError(t, err)
	id := res.Reservation.ID
	activation := func() int {
		var n int
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM work_queue WHERE kind = $1 AND key = $2",
			commands.KindReservationActivate, id).Scan(&n))
		return n
	}
	_, err = f.d.Pool.Exec(f.ctx, "DELETE FROM work_queue WHERE kind = $1 AND key = $2", commands.KindReservationActivate, id)
	require.NoError(t, err)
	_, err = f.d.Pool.Exec(f.ctx, "DELETE FROM work_queue WHERE kind = $1", commands.KindNodeJobDispatch)
	require.NoError(t, err) // only the resync is due
	require.NoError(t, f.svc.handlers.EnsureReservationResync(f.ctx))

	n, err := f.zombie.RunOnce(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the zombie claimed the resync")
	require.Zero(t, activation(), "a zombie resync queued work")

	_, err = f.heir.RunOnce(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, activation(), "the heir's resync puts the lost activation back")
}

// A node's assignment resync requeues a lost assign job only under its
// shard lease: a zombie's resync queues nothing, the heir's does.
func TestFencedNodeResync(t *testing.T) {
	t.Parallel()
	f := newFencedFixture(t, true)
	commandstest.Node(t, f.svc.handlers, "n1", core.GPULayout{Mode: core.GPUExclusive})
	now := f.d.Now(t)
	res, err := f.svc.handlers.CreateReservation(f.ctx, commandstest.TenantA, commands.CreateReservation{
		PoolID: commandstest.Pool, GPUs: 1, Start: now, End: now.Add(2 * time.Hour)})
	require.NoError(t, err)
	// Active: the resync repairs what the booking or the activation sent
	// (a booked one's missing assign is its activation's to queue).
	require.NoError(t, commandstest.Activate(f.ctx, f.svc.handlers, res.Reservation.ID))
	assigns := func() int {
		var n int
		require.NoError(t, f.d.Pool.QueryRow(f.ctx,
			"SELECT count(*) FROM node_commands WHERE node_id = 'n1' AND kind = 'assign'").Scan(&n))
		return n
	}
	require.Equal(t, 1, assigns(), "the booking queued its assign")
	// The assign job is lost, and only the node's resync is due.
	_, err = f.d.Pool.Exec(f.ctx, "DELETE FROM node_commands WHERE node_id = 'n1'")
	require.NoError(t, err)
	_, err = f.d.Pool.Exec(f.ctx, "DELETE FROM work_queue")
	require.NoError(t, err)
	require.NoError(t, workqueue.Enqueue(f.ctx, f.d.Q, commands.KindNodeResync, "n1", 0))

	n, err := f.zombie.RunOnce(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the zombie claimed the resync")
	require.Zero(t, assigns(), "a zombie resync queued an assign")

	_, err = f.heir.RunOnce(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, assigns(), "the heir's resync puts the lost assign back")
}

// The fair-share fold moves the settled totals only under its shard lease:
// a zombie's fold writes no watermark, the heir's does.
func TestFencedFairShareFold(t *testing.T) {
	t.Parallel()
	f := newFencedFixture(t, false)
	_, err := f.d.Pool.Exec(f.ctx, "DELETE FROM work_queue")
	require.NoError(t, err)
	require.NoError(t, f.svc.handlers.EnsureFairShareFold(f.ctx))
	folds := func() int {
		var n int
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM fair_share_folds").Scan(&n))
		return n
	}
	n, err := f.zombie.RunOnce(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the zombie claimed the fold")
	require.Zero(t, folds(), "a zombie fold wrote a watermark")

	_, err = f.heir.RunOnce(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, folds(), "the heir's fold writes the watermark")
}
