package commands_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/wire"
)

// An instance whose process exits on its own ends with its exit code:
// status 0 is succeeded (instance.succeeded), anything else failed with
// "exit status N", or "OOMKilled" when the OOM killer ended it; one
// reported without a status fails with the daemon's reason. The code
// is stored, shown by GET /v1/instances/{id} (exitCode) and carried by the
// event. A daemon's own stop still ends in stopped, with no code; a
// repeated report changes nothing; an exit reported before the start was
// (requested) passes through provisioning, the code on the last step only.
func TestExitedInstanceEndsWithItsExitCode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	d := f.connect(t, "n1", "j1", 0)
	rsv := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1}).Reservation
	f.activate(t, rsv)
	d.dispatch()
	d.report(d.sent[0].ID, "succeeded", "", 0) // the assign
	start := func() string {
		t.Helper()
		res, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID})
		require.NoError(t, err)
		d.dispatch()
		d.report(d.sent[len(d.sent)-1].ID, "succeeded", "", 0)
		require.Equal(t, core.ProvisionRunning, get(t, f, res.Instance.ID).State)
		return res.Instance.ID
	}
	code := func(c int32) *int32 { return &c }
	report := func(id string, exited bool, exit *int32, reason string) core.Instance {
		t.Helper()
		i, err := f.h.NodeSessions().RecordInstanceStopped(f.ctx, commands.RecordInstanceStopped{NodeID: "n1", Epoch: d.epoch,
			InstanceID: id, Reason: reason, Exited: exited, ExitCode: exit})
		require.NoError(t, err)
		return i
	}
	storedExit := func(id string) *int32 {
		t.Helper()
		var c *int32
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT exit_code FROM instances WHERE id = $1", id).Scan(&c))
		return c
	}
	lastEvent := func(typ, id string) map[string]any {
		t.Helper()
		var data []byte
		require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT data FROM outbox WHERE type = $1 AND subject = $2
			ORDER BY seq DESC LIMIT 1`, typ, core.InstanceSubject(id)).Scan(&data))
		var m map[string]any
		require.NoError(t, json.Unmarshal(data, &m))
		return m
	}

	ok := start()
	got := report(ok, true, code(0), "")
	require.Equal(t, core.ProvisionSucceeded, got.State)
	require.Equal(t, int32(0), *got.ExitCode)
	require.Equal(t, int32(0), *storedExit(ok))
	require.Equal(t, float64(0), lastEvent(core.EventInstanceSucceeded, ok)["exitCode"])
	view, err := json.Marshal(get(t, f, ok)) // what GET /v1/instances/{id} writes
	require.NoError(t, err)
	require.Contains(t, string(view), `"state":"succeeded"`)
	require.Contains(t, string(view), `"exitCode":0`)
	again := report(ok, true, code(0), "")
	require.Equal(t, got.Version, again.Version, "a repeated report changes nothing")
	require.Equal(t, 1, f.countEvents(t, core.EventInstanceSucceeded))

	bad := start()
	got = report(bad, true, code(3), "")
	require.Equal(t, core.ProvisionFailed, got.State)
	require.Equal(t, "exit status 3", got.Reason)
	require.Equal(t, int32(3), *storedExit(bad))
	failed := lastEvent(core.EventInstanceFailed, bad)
	require.Equal(t, float64(3), failed["exitCode"])
	require.Equal(t, "exit status 3", failed["reason"])

	oom := start()
	got = report(oom, true, code(137), wire.ReasonOOMKilled)
	require.Equal(t, core.ProvisionFailed, got.State)
	require.Equal(t, "OOMKilled", got.Reason)
	require.Equal(t, int32(137), *got.ExitCode)

	// Exited without a status: failed with the daemon's reason, which
	// says why there is none; "exited without a status" when it gave none.
	unknown := start()
	why := "exited after its node daemon restarted; its exit status is not known"
	got = report(unknown, true, nil, why)
	require.Equal(t, core.ProvisionFailed, got.State)
	require.Equal(t, why, got.Reason)
	require.Nil(t, got.ExitCode)
	require.Nil(t, storedExit(unknown))
	require.Equal(t, why, lastEvent(core.EventInstanceFailed, unknown)["reason"])
	silent := start()
	got = report(silent, true, nil, "")
	require.Equal(t, core.ProvisionFailed, got.State)
	require.Equal(t, "exited without a status", got.Reason)

	stopped := start()
	got = report(stopped, false, nil, "outlived its assignment")
	require.Equal(t, core.ProvisionStopped, got.State, "the daemon stopped it: stopped, as before")
	require.Nil(t, got.ExitCode)
	require.Nil(t, storedExit(stopped))

	// Exited before its start was reported: requested → provisioning →
	// succeeded; only the last event carries the code.
	early, err := f.h.CreateInstance(f.ctx, tenantA, commands.CreateInstance{ReservationID: rsv.ID})
	require.NoError(t, err)
	got = report(early.Instance.ID, true, code(0), "")
	require.Equal(t, core.ProvisionSucceeded, got.State)
	require.NotContains(t, lastEvent(core.EventInstanceProvisioning, early.Instance.ID), "exitCode")
	require.Equal(t, float64(0), lastEvent(core.EventInstanceSucceeded, early.Instance.ID)["exitCode"])
	f.requireInvariants(t)
}
