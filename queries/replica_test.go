package queries_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/cluster"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/queries"
)

// replicated is a primary with a seeded fleet and its projections, a
// standby whose statements are logged, and a query service reading the
// standby through a Replica.
type replicated struct {
	r       *pgtest.Replicated
	h       *commands.Handlers
	disps   []*outbox.Dispatcher
	log     *pgtest.StatementLog
	replica *queries.Replica
	svc     *queries.Service
}

func newReplicated(t *testing.T) *replicated {
	t.Helper()
	r := pgtest.NewReplicated(t)
	f := &replicated{r: r, h: commands.New(r.Pool, commands.Config{}), log: &pgtest.StatementLog{}}
	commandstest.Seed(t, r.DB, f.h, 0)
	commandstest.Node(t, f.h, "n1", core.GPULayout{Mode: core.GPUExclusive})
	for _, p := range projections.All() {
		f.disps = append(f.disps, outbox.NewTxDispatcher(r.Pool, "test", p, nil))
	}
	standby, err := pg.Connect(context.Background(), r.StandbyURL, pg.PoolOptions{MaxConns: 4,
		Tracer: pg.RoundTripTracer{Next: f.log}})
	require.NoError(t, err)
	t.Cleanup(standby.Close)
	f.replica = &queries.Replica{Pool: standby, Primary: r.Pool}
	f.svc = &queries.Service{Pool: r.Pool, Replica: f.replica}
	return f
}

// checkInRotation runs a check of the standby and requires it in rotation.
func (f *replicated) checkInRotation(t *testing.T) {
	t.Helper()
	_, err := f.replica.Check(context.Background(), time.Now())
	require.NoError(t, err)
	require.True(t, f.replica.InRotation())
}

// book creates a reservation on the primary and runs the projections
// there until they passed it; it returns the create's answer.
func (f *replicated) book(t *testing.T) commands.ReservationResult {
	t.Helper()
	ctx := context.Background()
	res, err := f.h.CreateReservation(ctx, tenantA, commands.CreateReservation{PoolID: commandstest.Pool, GPUs: 1,
		Start: at(1), End: at(2)})
	require.NoError(t, err)
	require.Equal(t, core.ReservationBooked, res.Reservation.State)
	for _, d := range f.disps {
		for {
			cur, err := outbox.CursorOf(ctx, f.r.Q, d.SinkID())
			require.NoError(t, err)
			if !cur.Less(res.Position) {
				break
			}
			_, err = d.RunOnce(ctx)
			require.NoError(t, err)
		}
	}
	_, err = f.h.ReleaseReservation(ctx, tenantA, commands.ReleaseReservation{ReservationID: res.Reservation.ID})
	require.NoError(t, err)
	return res
}

// A read-model query with minPosition, served by the standby, never
// answers from a read model older than the position: it waits until the
// standby has replayed the projection that passed it.
func TestReplicaServesReadModelsAtTheirPosition(t *testing.T) {
	t.Parallel()
	f := newReplicated(t)
	ctx := context.Background()
	f.checkInRotation(t) // a standby that keeps up is in rotation
	f.log.Take()
	for range 20 {
		res := f.book(t)
		got, err := f.svc.GetReservation(ctx, tenantA, res.Reservation.ID, res.Position)
		require.NoError(t, err, "the standby shows the reservation once it replayed its projection")
		require.Equal(t, core.ReservationBooked, got.State)
	}
	require.Contains(t, f.log.Take(), "RmReservationGet", "the standby served the reads")
}

// A standby that stops replaying is taken out of rotation once a check
// finds it further behind than MaxLag, and the reads go to the primary; it
// comes back once it has caught up.
func TestReplicaThatStopsReplayingLeavesRotation(t *testing.T) {
	t.Parallel()
	f := newReplicated(t)
	ctx := context.Background()
	t0 := time.Now()
	_, err := f.replica.Check(ctx, t0)
	require.NoError(t, err)
	require.True(t, f.replica.InRotation())

	_, err = f.replica.Pool.Exec(ctx, "SELECT pg_wal_replay_pause()")
	require.NoError(t, err)
	res := f.book(t)
	_, err = f.r.Pool.Exec(ctx, "SELECT pg_switch_wal()") // the writes leave the primary's buffers
	require.NoError(t, err)
	_, err = f.replica.Check(ctx, t0.Add(10*time.Second)) // samples the primary after the writes
	require.NoError(t, err)
	lag, err := f.replica.Check(ctx, t0.Add(20*time.Second))
	require.NoError(t, err)
	require.GreaterOrEqual(t, lag, 10*time.Second)
	require.False(t, f.replica.InRotation(), "10 s behind is beyond the 5 s bound")

	f.log.Take()
	got, err := f.svc.GetReservation(ctx, tenantA, res.Reservation.ID, res.Position)
	require.NoError(t, err, "the primary answers, not a 503")
	require.Equal(t, core.ReservationBooked, got.State)
	require.NotContains(t, f.log.Take(), "RmReservationGet", "the paused standby served nothing")

	_, err = f.replica.Pool.Exec(ctx, "SELECT pg_wal_replay_resume()")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := f.replica.Check(ctx, time.Now())
		return err == nil && f.replica.InRotation()
	}, time.Minute, 20*time.Millisecond, "back in rotation once it caught up")
}

// A standby that stalls between two checks stays in rotation until the
// next one, but a read of one's own write does not wait it out into a 503:
// after a fifth of the wait on the standby, the rest is on the primary,
// which answers.
func TestStalledReplicaReadsYourWritesFromThePrimary(t *testing.T) {
	t.Parallel()
	f := newReplicated(t)
	ctx := context.Background()
	f.checkInRotation(t)

	_, err := f.replica.Pool.Exec(ctx, "SELECT pg_wal_replay_pause()")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = f.replica.Pool.Exec(context.Background(), "SELECT pg_wal_replay_resume()") })
	res := f.book(t)
	f.svc.WaitTimeout = 2 * time.Second
	f.log.Take()
	got, err := f.svc.GetReservation(ctx, tenantA, res.Reservation.ID, res.Position)
	require.NoError(t, err, "the primary answers, not a 503")
	require.Equal(t, core.ReservationBooked, got.State)
	require.True(t, f.replica.InRotation(), "no check ran: the standby is still in rotation")
	require.NotContains(t, f.log.Take(), "RmReservationGet", "the stalled standby served nothing")
}

// A standby that cannot be checked from the start (a wrong URL, a server
// down, a database that is not a standby) never enters rotation, so no
// change of rotation would mention it: its first failed check is logged,
// with the error, once.
func TestReplicaThatCannotBeCheckedIsLogged(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	ctx := context.Background()
	unreachable, err := pgxpool.New(ctx, "postgres://compute@127.0.0.1:1/compute?connect_timeout=1")
	require.NoError(t, err)
	t.Cleanup(unreachable.Close)
	for name, standby := range map[string]*pgxpool.Pool{"not a standby": d.Pool, "unreachable": unreachable} {
		var logs bytes.Buffer
		r := &queries.Replica{Pool: standby, Primary: d.Pool, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
		for range 3 {
			_, err := r.Check(ctx, time.Now())
			require.Error(t, err, name)
			require.False(t, r.InRotation(), name)
		}
		require.Equal(t, 1, strings.Count(logs.String(), `"msg":"read replica out of rotation: reads go to the primary"`),
			"%s: logged once:\n%s", name, logs.String())
		require.Contains(t, logs.String(), `"err":"`, name)
	}
}

// A standby that holds writes its primary does not have is no copy of it:
// the primary was restored to an earlier point, or another standby was
// promoted in its place, while this one kept the old history. It is ahead
// of the primary, so no lag shows, yet it shows reservations that no
// longer exist and would answer a minPosition from them. It never enters
// rotation, and says why.
func TestReplicaOfAnotherHistoryStaysOutOfRotation(t *testing.T) {
	t.Parallel()
	f := newReplicated(t)
	ctx := context.Background()
	kept := f.book(t)
	// The restored primary: a second standby, promoted once it replayed the
	// first booking; the old primary's next writes never reach it.
	restored, err := f.r.Primary.StartStandby(ctx, cluster.Options{Dir: filepath.Join(t.TempDir(), "restored"), Fast: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = restored.Stop() })
	primary, err := pg.Connect(ctx, restored.URL("compute"), pg.PoolOptions{MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(primary.Close)
	require.Eventually(t, func() bool {
		_, err := queries.New(primary).GetReservation(ctx, tenantA, kept.Reservation.ID, outbox.Position{})
		return err == nil
	}, time.Minute, 20*time.Millisecond)
	_, err = primary.Exec(ctx, "SELECT pg_promote()")
	require.NoError(t, err)
	lost := f.book(t) // on the old history only: the standby replays it
	require.Eventually(t, func() bool {
		_, err := queries.New(f.replica.Pool).GetReservation(ctx, tenantA, lost.Reservation.ID, outbox.Position{})
		return err == nil
	}, time.Minute, 20*time.Millisecond)

	var logs bytes.Buffer
	r := &queries.Replica{Pool: f.replica.Pool, Primary: primary, Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
	svc := &queries.Service{Pool: primary, Replica: r}
	for range 3 {
		_, err := r.Check(ctx, time.Now())
		require.ErrorContains(t, err, "no event of the primary's log")
		require.False(t, r.InRotation(), "a standby of another history serves nothing")
	}
	require.Contains(t, logs.String(), "no event of the primary's log")
	_, err = svc.GetReservation(ctx, tenantA, lost.Reservation.ID, outbox.Position{})
	require.Equal(t, core.CodeNotFound, core.CodeOf(err), "the primary answers: the lost booking never happened")
}

// A standby that goes down between two checks (a crash, a restart) is
// still in rotation until the next check, but reads do not fail for it:
// the primary answers them.
func TestReplicaThatGoesDownBetweenChecksReadsFromThePrimary(t *testing.T) {
	t.Parallel()
	f := newReplicated(t)
	ctx := context.Background()
	f.checkInRotation(t)
	res := f.book(t)
	require.NoError(t, f.r.Standby.Crash(ctx))
	t.Cleanup(func() { _ = f.r.Standby.Recover(context.Background()) })

	got, err := f.svc.GetReservation(ctx, tenantA, res.Reservation.ID, res.Position)
	require.NoError(t, err, "the primary answers a read of one's own write")
	require.Equal(t, res.Reservation.ID, got.ID)
	require.False(t, f.replica.InRotation(), "the failed read took it out of rotation before the next check")
	got, err = f.svc.GetReservation(ctx, tenantA, res.Reservation.ID, outbox.Position{})
	require.NoError(t, err, "the primary answers a read without minPosition")
	require.Equal(t, res.Reservation.ID, got.ID)

	require.NoError(t, f.r.Standby.Recover(ctx))
	require.Eventually(t, func() bool {
		_, err := f.replica.Check(ctx, time.Now())
		return err == nil && f.replica.InRotation()
	}, time.Minute, 20*time.Millisecond, "back in rotation once a check finds it answering")
	f.log.Take()
	_, err = f.svc.GetReservation(ctx, tenantA, res.Reservation.ID, res.Position)
	require.NoError(t, err)
	require.Contains(t, f.log.Take(), "RmReservationGet", "the standby serves again")
}

// A standby that hangs (a frozen machine, a stalled disk: connections stay
// open and nothing answers) holds no read: a read of one's own write is
// answered by the primary, and the next check takes the standby out of
// rotation instead of waiting for it for ever.
func TestFrozenReplicaLeavesRotation(t *testing.T) {
	t.Parallel()
	f := newReplicated(t)
	ctx := context.Background()
	f.checkInRotation(t)
	res := f.book(t)
	thaw, err := f.r.Standby.Freeze()
	require.NoError(t, err)
	t.Cleanup(thaw)

	read := make(chan error, 1)
	go func() {
		_, err := f.svc.GetReservation(ctx, tenantA, res.Reservation.ID, res.Position)
		read <- err
	}()
	select {
	case err := <-read:
		require.NoError(t, err, "the primary answers a read of one's own write")
		require.True(t, f.replica.InRotation(), "slow is not gone: the check decides")
	case <-time.After(30 * time.Second):
		t.Fatal("a read waited on the frozen standby for 30 s")
	}
	checked := make(chan error, 1)
	go func() {
		_, err := f.replica.Check(ctx, time.Now())
		checked <- err
	}()
	select {
	case err := <-checked:
		require.Error(t, err)
		require.False(t, f.replica.InRotation(), "a standby that does not answer its check is out")
	case <-time.After(30 * time.Second):
		t.Fatal("the check waited on the frozen standby for 30 s")
	}
}
