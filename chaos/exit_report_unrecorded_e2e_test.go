package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestInstanceExitReportTheGatewayFailedToRecord: with real processes
// (`compute serve`, `compute agent` under runc), an instance exits with
// status 3 while its daemon's session is open, the daemon writes its
// report, and the gateway's transaction that records it fails (a trigger
// that raises, as a database failing does); then the gateway is killed
// and comes back. The daemon kept the report, as the gateway never
// acknowledged it, and sends it again on its next session before its
// inventory: the instance ends `failed` with exit code 3. Before, a report
// was forgotten once written, and that inventory, no longer listing the
// instance, ended it `lost`.
func TestInstanceExitReportTheGatewayFailedToRecord(t *testing.T) {
	runSize(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	f := newAssignFleet(t, ctx)
	r, alloc := f.bookAssigned("n1")
	var in struct {
		ID, State, Reason string
		ExitCode          *int32 `json:"exitCode"`
	}
	f.must(f.member, "POST", "/v1/instances", uuid.NewString(), map[string]any{"reservationId": r.ID,
		"command": "touch started; until [ -e go ]; do sleep 0.05; done; exit 3"}, &in)
	get := func() error { return f.member.do(ctx, "GET", f.hub.URL()+"/v1/instances/"+in.ID, "", nil, &in) }
	dir := filepath.Join(f.wlRoot, "n1", alloc, "work", "instances", in.ID)
	waitFor(t, ctx, "instance "+in.ID+" running", 30*time.Second, func() (bool, error) {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return in.State == "running" && err == nil, get()
	})
	if _, err := f.pool.Exec(ctx, `
		CREATE FUNCTION chaos_instance_end_fails() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
			IF OLD.id = '`+in.ID+`' THEN RAISE EXCEPTION 'chaos: the database fails' USING ERRCODE = '08006'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER chaos_instance_end_fails BEFORE UPDATE ON instances
			FOR EACH ROW EXECUTE FUNCTION chaos_instance_end_fails()`); err != nil {
		t.Fatal(err)
	}
	logStart := fileSize(t, f.hub.logPath)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the gateway failed to record the end", 30*time.Second, func() (bool, error) {
		return strings.Contains(tailFrom(f.hub.logPath, logStart), "chaos: the database fails"), nil
	})
	if _, err := f.pool.Exec(ctx, `DROP TRIGGER chaos_instance_end_fails ON instances`); err != nil {
		t.Fatal(err)
	}
	// The gateway restarts (SIGTERM: it gives its lease up, so the one
	// that comes back serves at once); the next session opens after the
	// instance last changed, by the simulated clock: its first inventory
	// judges the instance at once.
	f.sim.advanceTo(ctx, f.sim.now(ctx).Add(time.Second))
	_ = f.hub.cmd.Process.Signal(syscall.SIGTERM)
	<-f.hub.done
	if err := f.hub.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "instance "+in.ID+" ended", 60*time.Second, func() (bool, error) {
		return in.State != "running", get()
	})
	if in.State != "failed" || in.Reason != "exit status 3" || in.ExitCode == nil || *in.ExitCode != 3 {
		code := "none"
		if in.ExitCode != nil {
			code = fmt.Sprint(*in.ExitCode)
		}
		t.Fatalf("exit 3 whose report the gateway failed to record: %s, reason %q, exit code %s; want failed, %q, 3",
			in.State, in.Reason, code, "exit status 3")
	}
}
