package commands_test

import (
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/workqueue"
)

// instanceRetention is a retention fixture with n1's daemon connected and
// an active reservation of acme's on it that lasts 40 days, its assign
// carried out: instances run at once.
type instanceRetention struct {
	*retentionFixture
	n1  *daemon // n1's daemon
	rsv core.Reservation
}

func setupInstanceRetention(t *testing.T) *instanceRetention {
	t.Helper()
	f := &instanceRetention{retentionFixture: setupRetention(t)}
	f.node(t, "n1", exclusive)
	f.n1 = f.connect(t, "n1", "j1", 0)
	start, end := window(0, 40*24)
	f.rsv = f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: start, End: end}).Reservation
	f.activate(t, f.rsv)
	f.n1.dispatch()
	f.n1.report(f.n1.sent[0].ID, "succeeded", "", 0) // the assign
	return f
}

// run starts an instance and reports its start: it is running.
func (f *instanceRetention) run(t *testing.T) string {
	t.Helper()
	res, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: f.rsv.ID})
	require.NoError(t, err)
	f.n1.dispatch()
	f.n1.report(f.n1.sent[len(f.n1.sent)-1].ID, "succeeded", "", 0)
	require.Equal(t, core.ProvisionRunning, get(t, f.fixture, res.Instance.ID).State)
	return res.Instance.ID
}

// exited is the daemon's report that id's process exited with code.
func (f *instanceRetention) exited(id string, code int32) (core.Instance, error) {
	return f.h.NodeSessions().RecordInstanceStopped(f.ctx, commands.RecordInstanceStopped{NodeID: "n1",
		Epoch: f.n1.epoch, InstanceID: id, Exited: true, ExitCode: &code})
}

// stop deletes id (instances.delete) and reports its stop carried out.
func (f *instanceRetention) stop(t *testing.T, id string) {
	t.Helper()
	_, err := f.h.DeleteInstance(f.ctx, tenantA, id)
	require.NoError(t, err)
	f.n1.dispatch()
	f.n1.report(f.n1.sent[len(f.n1.sent)-1].ID, "succeeded", "", 0)
	require.Equal(t, core.ProvisionStopped, get(t, f.fixture, id).State)
}

// jobsOf is the ids of the node jobs that carry out instance id.
func (f *instanceRetention) jobsOf(t *testing.T, id string) []string {
	t.Helper()
	rows, err := f.d.Pool.Query(f.ctx, "SELECT id FROM node_commands WHERE instance_id = $1 ORDER BY seq", id)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return ids
}

// An instance that ended (stopped, failed, succeeded) is pruned
// COMPUTE_WORK_RETENTION after it ended, with its node jobs, and not a
// moment earlier; a running one stays whatever its age. Its id is then
// NOT_FOUND (GET /v1/instances/{id} is 404) and the reservation's list no
// longer has it.
func TestRetentionPrunesEndedInstances(t *testing.T) {
	t.Parallel()
	f := setupInstanceRetention(t)
	stopped, failed, live := f.run(t), f.run(t), f.run(t)
	f.stop(t, stopped)
	_, err := f.exited(failed, 3)
	require.NoError(t, err)
	f.d.AdvanceSimClock(t, 2*day)
	young := f.run(t)
	_, err = f.exited(young, 0)
	require.NoError(t, err)
	all := []any{stopped, failed, live, young}

	f.d.AdvanceSimClock(t, 5*day-time.Second) // a second before stopped and failed are 7 days over
	require.Zero(t, f.prune(t).Instances, "nothing is due a second early")
	require.Equal(t, all, f.present(t, "instances", all...))

	f.d.AdvanceSimClock(t, 2*time.Second)
	res := f.prune(t)
	require.Equal(t, int64(2), res.Instances)
	require.Equal(t, []any{live, young}, f.present(t, "instances", all...))
	for _, id := range []string{stopped, failed} {
		require.Empty(t, f.jobsOf(t, id), "its start (and stop) went first, in the same run")
		_, err := f.h.GetInstance(f.ctx, tenantA, id)
		require.Equal(t, core.CodeNotFound, core.CodeOf(err), "a pruned instance is NOT_FOUND, as a missing one is")
		_, err = f.h.DeleteInstance(f.ctx, tenantA, id)
		require.Equal(t, core.CodeNotFound, core.CodeOf(err))
	}
	page, err := f.h.ListInstances(f.ctx, tenantA, f.rsv.ID, "", 0)
	require.NoError(t, err)
	var listed []string
	for _, i := range page.Items {
		listed = append(listed, i.ID)
	}
	require.Equal(t, []string{live, young}, listed)

	// An ended instance is never changed again, whatever the caller
	// checked: its updated_at stays when it ended.
	ended := get(t, f.fixture, young)
	n, err := f.d.Q.InstanceUpdateState(f.ctx, db.InstanceUpdateStateParams{ID: young, Version: ended.Version,
		State: string(core.ProvisionRunning)})
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, ended, get(t, f.fixture, young))

	f.d.AdvanceSimClock(t, 2*day) // young is 7 days over; live has run 9 days
	require.Equal(t, int64(1), f.prune(t).Instances)
	require.Equal(t, []any{live}, f.present(t, "instances", all...), "a running instance stays whatever its age")
	require.Equal(t, core.ProvisionRunning, get(t, f.fixture, live).State)
	f.requireInvariants(t)
}

// A daemon's late word on an instance the control plane pruned is
// harmless: its stop or exit report and its jobs' results are NOT_FOUND
// (the gateway logs them and the session goes on), an inventory that
// still lists it ends nothing, and none of them brings the instance, its
// jobs or an event of it back.
func TestRetentionLateReportOfPrunedInstance(t *testing.T) {
	t.Parallel()
	f := setupInstanceRetention(t)
	gone, live := f.run(t), f.run(t)
	goneJobs := f.jobsOf(t, gone)
	require.Len(t, goneJobs, 1, "its start")
	_, err := f.exited(gone, 1)
	require.NoError(t, err)
	f.d.AdvanceSimClock(t, 7*day+time.Second)
	require.Equal(t, int64(1), f.prune(t).Instances)
	require.Empty(t, f.present(t, "instances", gone))
	events := func() int {
		return f.count(t, "SELECT count(*) FROM outbox WHERE subject = $1", core.InstanceSubject(gone))
	}
	before := events()

	d := f.connect(t, "n1", "j1", 1) // the daemon comes back a week later
	_, err = f.h.NodeSessions().RecordInstanceStopped(f.ctx, commands.RecordInstanceStopped{NodeID: "n1",
		Epoch: d.epoch, InstanceID: gone, Reason: "outlived its assignment"})
	require.Equal(t, core.CodeNotFound, core.CodeOf(err), "a stop report")
	code := int32(0)
	_, err = f.h.NodeSessions().RecordInstanceStopped(f.ctx, commands.RecordInstanceStopped{NodeID: "n1",
		Epoch: d.epoch, InstanceID: gone, Exited: true, ExitCode: &code})
	require.Equal(t, core.CodeNotFound, core.CodeOf(err), "an exit report")
	err = f.h.NodeSessions().RecordNodeJobResult(f.ctx, commands.RecordNodeJobResult{NodeID: "n1", Epoch: d.epoch,
		JobID: goneJobs[0], State: "succeeded"})
	require.Equal(t, core.CodeNotFound, core.CodeOf(err), "its start's result")
	lost, err := f.h.NodeSessions().ReconcileNodeInstances(f.ctx, "n1", d.epoch, []string{gone, live})
	require.NoError(t, err, "an inventory that lists it")
	require.Empty(t, lost)

	require.Empty(t, f.present(t, "instances", gone), "not brought back")
	require.Empty(t, f.jobsOf(t, gone))
	require.Equal(t, before, events(), "no event of it")
	require.Equal(t, core.ProvisionRunning, get(t, f.fixture, live).State)
	f.requireInvariants(t)
}

// A work retention of 0 keeps ended instances for ever (and counts none
// overdue); a pruner that lost its shard lease deletes none, and the new
// holder does.
func TestRetentionOfInstancesIsForeverAtZeroAndFenced(t *testing.T) {
	t.Parallel()
	f := setupInstanceRetention(t)
	ended := f.run(t)
	f.stop(t, ended)
	f.d.AdvanceSimClock(t, 30*day)

	forever := &commands.Pruner{Pool: f.d.Pool, Retention: commands.Retention{Events: 30 * day, WebhookAttempts: 3 * day}}
	res, err := forever.Prune(f.ctx, nil)
	require.NoError(t, err)
	require.Zero(t, res.Instances)
	require.Zero(t, res.NodeJobs)
	require.Equal(t, []any{ended}, f.present(t, "instances", ended))
	overdue := func(p *commands.Pruner) commands.OverdueRows {
		rows, err := p.Overdue(f.ctx)
		require.NoError(t, err)
		i := slices.IndexFunc(rows, func(r commands.OverdueRows) bool { return r.Table == "instances" })
		require.GreaterOrEqual(t, i, 0)
		return rows[i]
	}
	require.Equal(t, commands.OverdueRows{Table: "instances", Rule: "ended, kept forever"}, overdue(forever))
	require.Equal(t, commands.OverdueRows{Table: "instances", Rule: "ended, older than 168h0m0s", Rows: 1}, overdue(f.p))

	shard := workqueue.ShardLeaseName(workqueue.ShardOf(commands.RetentionPruneKey))
	zombie, err := lease.Acquire(f.ctx, f.d.Q, shard, "zombie", lease.TTL)
	require.NoError(t, err)
	f.d.AdvanceSimClock(t, lease.TTL+time.Second)
	heir, err := lease.Acquire(f.ctx, f.d.Q, shard, "heir", lease.TTL)
	require.NoError(t, err)
	err = f.p.HandleRetentionPrune(f.ctx, workqueue.Item{Kind: commands.KindRetentionPrune,
		Key: commands.RetentionPruneKey, Lease: zombie})
	require.ErrorIs(t, err, lease.ErrFenced)
	require.Equal(t, []any{ended}, f.present(t, "instances", ended), "the zombie deleted nothing")
	require.Len(t, f.jobsOf(t, ended), 2, "not even its jobs")

	res, err = f.p.Prune(f.ctx, func(tx pgx.Tx) error { return heir.Fence(f.ctx, tx) })
	require.NoError(t, err)
	require.Equal(t, int64(1), res.Instances)
	require.Empty(t, f.present(t, "instances", ended))
	require.Zero(t, overdue(f.p).Rows)
}

// An instance that ended is kept while a node job of it is: its stop can
// finish after the instance did (the daemon reported it stopped on its
// own while the stop was still queued), and the job references the
// instance. It goes in the run that prunes its last job.
func TestRetentionKeepsAnInstanceWhileItsJobsStay(t *testing.T) {
	t.Parallel()
	f := setupInstanceRetention(t)
	id := f.run(t)
	_, err := f.h.DeleteInstance(f.ctx, tenantA, id)
	require.NoError(t, err)
	_, err = f.h.NodeSessions().RecordInstanceStopped(f.ctx, commands.RecordInstanceStopped{NodeID: "n1",
		Epoch: f.n1.epoch, InstanceID: id, Reason: "outlived its assignment"})
	require.NoError(t, err)
	require.Equal(t, core.ProvisionStopped, get(t, f.fixture, id).State, "ended, its stop still queued")

	f.d.AdvanceSimClock(t, 3*day)
	f.n1.dispatch()
	f.n1.report(f.n1.sent[len(f.n1.sent)-1].ID, "succeeded", "", 0) // the stop, three days later
	require.Len(t, f.jobsOf(t, id), 2)

	f.d.AdvanceSimClock(t, 4*day+time.Second) // the instance ended 7 days ago, its stop 4
	res := f.prune(t)
	require.Zero(t, res.Instances)
	require.Equal(t, []any{id}, f.present(t, "instances", id))
	require.Len(t, f.jobsOf(t, id), 1, "its start went; its stop stays")

	f.d.AdvanceSimClock(t, 3*day)
	res = f.prune(t)
	require.Equal(t, int64(1), res.Instances)
	require.Empty(t, f.present(t, "instances", id))
	require.Empty(t, f.jobsOf(t, id))
}
