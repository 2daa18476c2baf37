package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/billing"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/webhook"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// waitFor bounds every wait on the outbox frontier.
const waitFor = 20 * time.Second

// usage is one tenant's totals as the consumer counted them.
type usage struct{ windows, reservedMs, deviceMs, vcpuMs int64 }

func totals(t *testing.T, d *pgtest.DB, tenant string) usage {
	t.Helper()
	var u usage
	err := d.Pool.QueryRow(context.Background(), `SELECT coalesce(sum(windows), 0), coalesce(sum(reserved_ms), 0),
	       coalesce(sum(device_ms), 0), coalesce(sum(vcpu_ms), 0) FROM tenant_usage WHERE tenant = $1`, tenant).
		Scan(&u.windows, &u.reservedMs, &u.deviceMs, &u.vcpuMs)
	require.NoError(t, err)
	return u
}

// The billing sink's redelivery is not double-counted: a reservation's two
// closed windows are billed once, and when the sink sends them again (a
// crash before it saved its cursor or recorded its attempts) the consumer
// acknowledges them by key and counts nothing more.
func TestRedeliveredWindowIsCountedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t) // the control plane's database; the consumer's tables live in it too
	h := commands.New(d.Pool, commands.Config{})
	commandstest.Seed(t, d, h, 2)
	commandstest.Node(t, h, "n1", core.GPULayout{Mode: core.GPUExclusive})
	res, err := h.CreateReservation(ctx, commandstest.TenantA, commands.CreateReservation{PoolID: commandstest.Pool,
		GPUs: 1, VCPU: 4, Start: pgtest.SimEpoch, End: pgtest.SimEpoch.Add(2 * time.Hour)})
	require.NoError(t, err)
	d.AdvanceSimClock(t, 90*time.Minute)
	require.NoError(t, commandstest.Activate(ctx, h, res.Reservation.ID))
	_, err = h.ReleaseReservation(ctx, commandstest.TenantA, commands.ReleaseReservation{ReservationID: res.Reservation.ID})
	require.NoError(t, err)

	_, err = d.Pool.Exec(ctx, schema)
	require.NoError(t, err)
	secret, now := webhook.NewSecret(), d.Now(t)
	srv := httptest.NewServer(&consumer{secret: secret, pool: d.Pool, logger: slog.New(slog.DiscardHandler),
		now: func() time.Time { return now }})
	t.Cleanup(srv.Close)
	sink, err := billing.New(d.Pool, billing.Config{URL: srv.URL, Secret: secret}, nil)
	require.NoError(t, err)
	usageWindows := outbox.NewTxDispatcher(d.Pool, "test", projections.UsageWindows{}, nil)
	deliver := outbox.NewDispatcher(d.Pool, "test", sink, nil)

	var last outbox.Position
	require.NoError(t, d.Pool.QueryRow(ctx, "SELECT txid, seq FROM outbox ORDER BY txid DESC, seq DESC LIMIT 1").
		Scan(&last.TxID, &last.Seq))
	step := func(disp *outbox.Dispatcher) {
		t.Helper()
		require.Eventually(t, func() bool {
			_, err := disp.RunOnce(ctx)
			require.NoError(t, err)
			cur, err := outbox.CursorOf(ctx, d.Q, disp.SinkID())
			require.NoError(t, err)
			return !cur.Less(last)
		}, waitFor, 2*time.Millisecond)
	}
	step(usageWindows)
	step(deliver)
	want := usage{windows: 2, reservedMs: 5400_000, deviceMs: 5400_000, vcpuMs: 4 * 5400_000}
	require.Equal(t, want, totals(t, d, "acme"))

	// Everything the sink knew is lost but the log: it sends both windows
	// again, with the same keys.
	_, err = d.Pool.Exec(ctx, "DELETE FROM billing_deliveries")
	require.NoError(t, err)
	_, err = d.Pool.Exec(ctx, "DELETE FROM outbox_cursors WHERE sink = $1", billing.SinkID)
	require.NoError(t, err)
	step(deliver)
	var attempts int
	require.NoError(t, d.Pool.QueryRow(ctx, "SELECT count(*) FROM billing_deliveries WHERE delivered_at IS NOT NULL").Scan(&attempts))
	require.Equal(t, 2, attempts, "both windows were delivered again")
	require.Equal(t, want, totals(t, d, "acme"), "and not counted again")
}

// Only signed requests whose webhook-id is the window's key are counted.
func TestConsumerRejectsUnsignedAndMismatchedRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	_, err := d.Pool.Exec(ctx, schema)
	require.NoError(t, err)
	secret, now := webhook.NewSecret(), time.Date(2030, 1, 1, 2, 0, 0, 0, time.UTC)
	c := &consumer{secret: secret, pool: d.Pool, logger: slog.New(slog.DiscardHandler), now: func() time.Time { return now }}
	body := []byte(`{"key":"cmp:alc_1:2030-01-01T00:00:00Z","tenant":"acme","reservedMs":1000,"deviceMs":2000,"vcpu":1,"gpuKind":"gpu"}`)
	post := func(id, sigSecret string) int {
		t.Helper()
		r := httptest.NewRequest(http.MethodPost, "/usage", bytes.NewReader(body))
		require.NoError(t, webhook.SetHeaders(r.Header, []string{sigSecret}, id, now, body))
		w := httptest.NewRecorder()
		c.ServeHTTP(w, r)
		return w.Code
	}
	require.Equal(t, http.StatusBadRequest, post("cmp:alc_1:2030-01-01T00:00:00Z", webhook.NewSecret()), "another secret")
	require.Equal(t, http.StatusBadRequest, post("cmp:alc_2:2030-01-01T00:00:00Z", secret), "another key")
	require.Equal(t, usage{}, totals(t, d, "acme"))
	require.Equal(t, http.StatusNoContent, post("cmp:alc_1:2030-01-01T00:00:00Z", secret))
	require.Equal(t, http.StatusNoContent, post("cmp:alc_1:2030-01-01T00:00:00Z", secret), "a duplicate is acknowledged")
	require.Equal(t, usage{windows: 1, reservedMs: 1000, deviceMs: 2000, vcpuMs: 1000}, totals(t, d, "acme"))
}
