package gateway_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/wire"
)

// A daemon's instance end is acknowledged (report.ack, its report id) only
// once it is recorded: one whose transaction failed is not, so the daemon
// keeps it and sends it again, and the instance ends `failed` with its
// exit status instead of `lost` at the daemon's next inventory. Before,
// nothing was acknowledged, and a daemon forgot a report once written. A
// report without an id (a daemon of a release before them) is recorded and
// not answered; one refused for good (no such instance of the node) is
// acknowledged, so that it is not sent for ever.
func TestAnInstanceEndIsAcknowledgedOnceRecorded(t *testing.T) {
	t.Parallel()
	f := setup(t)
	d, assign, insts := f.runningInstances(t, 2)
	ended := func(id, report string) wire.Message {
		three := int32(3)
		p, err := json.Marshal(wire.InstanceStopped{InstanceID: id, AllocationID: assign.AllocationID,
			Reason: "exit status 3", Exited: true, ExitCode: &three, At: f.d.Now(t)})
		require.NoError(t, err)
		return wire.Message{Type: wire.TypeInstanceStopped, AllocationID: assign.AllocationID, Payload: p, ReportID: report}
	}

	// The first instance's record fails (its transaction): no ack.
	_, err := f.d.Pool.Exec(f.ctx, `
		CREATE FUNCTION test_instance_end_fails() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
			IF OLD.id = '`+insts[0].ID+`' THEN RAISE EXCEPTION 'the database fails' USING ERRCODE = '08006'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER test_instance_end_fails BEFORE UPDATE ON instances
			FOR EACH ROW EXECUTE FUNCTION test_instance_end_fails()`)
	require.NoError(t, err)
	d.send(ended(insts[0].ID, "r1"))
	// A report from an older daemon (no id), then one refused for good:
	// only the latter is answered, and nothing before it.
	d.send(ended(insts[1].ID, ""))
	d.send(ended("ins_notonthisnode", "r2"))
	require.Equal(t, wire.Message{Type: wire.TypeReportAck, ReportID: "r2"}, d.next(),
		"a report that failed, or that had no id, was acknowledged")
	_, err = f.d.Pool.Exec(f.ctx, `DROP TRIGGER test_instance_end_fails ON instances`)
	require.NoError(t, err)
	s, _ := f.instanceState(insts[0].ID)
	require.Equal(t, "running", s)
	s, _ = f.instanceState(insts[1].ID)
	require.Equal(t, "failed", s)

	// Sent again: recorded, then acknowledged.
	d.send(ended(insts[0].ID, "r1"))
	require.Equal(t, wire.Message{Type: wire.TypeReportAck, ReportID: "r1"}, d.next())
	i, err := f.d.Q.InstanceGet(f.ctx, insts[0].ID)
	require.NoError(t, err)
	require.Equal(t, "failed", i.State, "acknowledged before it was recorded")
	require.Equal(t, "exit status 3", i.Reason)
	require.Equal(t, int32(3), *i.ExitCode)
	f.requireInvariants()
}
