package billing_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
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
	"github.com/bettercompute/compute/queries"
	"github.com/bettercompute/compute/webhook"
)

// waitFor bounds every wait on the outbox frontier: other tests on the same
// server can hold it back briefly.
const waitFor = 20 * time.Second

// request is one request the billing endpoint received.
type request struct {
	header http.Header
	body   []byte
	window queries.UsageWindow
}

// endpoint is a billing endpoint that answers the first `fail` requests
// with 503 and accepts the others.
type endpoint struct {
	mu   sync.Mutex
	fail int
	got  []request
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var win queries.UsageWindow
	_ = json.Unmarshal(body, &win)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, request{header: r.Header.Clone(), body: body, window: win})
	if e.fail > 0 {
		e.fail--
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (e *endpoint) requests() []request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]request(nil), e.got...)
}

// fixture is a fleet of one node, the usage-windows projection, and the
// billing sink pointed at an endpoint.
type fixture struct {
	ctx     context.Context
	d       *pgtest.DB
	h       *commands.Handlers
	secret  string
	ep      *endpoint
	usage   *outbox.Dispatcher
	billing *outbox.Dispatcher
}

func setup(t *testing.T, fail int) *fixture {
	t.Helper()
	d := pgtest.New(t)
	f := &fixture{ctx: context.Background(), d: d, h: commands.New(d.Pool, commands.Config{}), secret: webhook.NewSecret(),
		ep: &endpoint{fail: fail}}
	commandstest.Seed(t, d, f.h, 2)
	commandstest.Node(t, f.h, "n1", core.GPULayout{Mode: core.GPUExclusive})
	srv := httptest.NewServer(f.ep)
	t.Cleanup(srv.Close)
	sink, err := billing.New(d.Pool, billing.Config{URL: srv.URL, Secret: f.secret}, nil)
	require.NoError(t, err)
	require.Equal(t, billing.SinkID, sink.ID())
	f.usage = outbox.NewTxDispatcher(d.Pool, "test", projections.UsageWindows{}, nil)
	f.billing = outbox.NewDispatcher(d.Pool, "test", sink, nil)
	return f
}

// lastPosition is the position of the newest event in the log.
func (f *fixture) lastPosition(t *testing.T) outbox.Position {
	t.Helper()
	var p outbox.Position
	require.NoError(t, f.d.Pool.QueryRow(f.ctx,
		"SELECT txid, seq FROM outbox ORDER BY txid DESC, seq DESC LIMIT 1").Scan(&p.TxID, &p.Seq))
	return p
}

// passed reports whether a sink's cursor is at or after p.
func (f *fixture) passed(t *testing.T, sink string, p outbox.Position) bool {
	t.Helper()
	cur, err := outbox.CursorOf(f.ctx, f.d.Q, sink)
	require.NoError(t, err)
	return !cur.Less(p)
}

// catchUpUsage steps the usage-windows projection over the whole log.
// Events become visible only below the cluster-wide snapshot xmin, so it
// polls with a deadline.
func (f *fixture) catchUpUsage(t *testing.T) {
	t.Helper()
	last := f.lastPosition(t)
	require.Eventually(t, func() bool {
		_, err := f.usage.RunOnce(f.ctx)
		require.NoError(t, err)
		return f.passed(t, projections.NameUsageWindows, last)
	}, waitFor, 2*time.Millisecond)
}

// stepBilling runs the billing dispatcher until it either returns an error
// or has passed the end of the log, and returns that error.
func (f *fixture) stepBilling(t *testing.T) error {
	t.Helper()
	last := f.lastPosition(t)
	var err error
	require.Eventually(t, func() bool {
		_, err = f.billing.RunOnce(f.ctx)
		return err != nil || f.passed(t, billing.SinkID, last)
	}, waitFor, 2*time.Millisecond)
	return err
}

// usedReservation books one GPU for [0 h, 2 h) and releases it at 1.5 h:
// two closed windows, a full hour and a half hour.
func (f *fixture) usedReservation(t *testing.T) (reservationID, allocationID string) {
	t.Helper()
	res, err := f.h.CreateReservation(f.ctx, commandstest.TenantA, commands.CreateReservation{PoolID: commandstest.Pool,
		GPUs: 1, VCPU: 4, MemoryMB: 2048, DiskGB: 20, Start: pgtest.SimEpoch, End: pgtest.SimEpoch.Add(2 * time.Hour)})
	require.NoError(t, err)
	id := res.Reservation.ID
	f.d.AdvanceSimClock(t, 90*time.Minute)
	require.NoError(t, commandstest.Activate(f.ctx, f.h, id))
	_, err = f.h.ReleaseReservation(f.ctx, commandstest.TenantA, commands.ReleaseReservation{ReservationID: id})
	require.NoError(t, err)
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT id FROM allocations WHERE reservation_id = $1", id).Scan(&allocationID))
	return id, allocationID
}

// A closed window reaches the billing endpoint at least once, keyed
// cmp:<allocationId>:<windowStart>, signed, and survives a failed first
// delivery: the sink's cursor stays before the reservation's end until the
// endpoint accepted every window of it, the retry waits out its back-off
// on the simulated clock, and a window already accepted is not sent again.
func TestClosedWindowReachesBillingAtLeastOnce(t *testing.T) {
	t.Parallel()
	f := setup(t, 1)
	id, alloc := f.usedReservation(t)
	keys := []string{"cmp:" + alloc + ":2030-01-01T00:00:00Z", "cmp:" + alloc + ":2030-01-01T01:00:00Z"}

	// The windows are final only once the projection applied the end:
	// until then billing waits and sends nothing.
	require.ErrorContains(t, f.stepBilling(t), "behind")
	require.Empty(t, f.ep.requests())
	f.catchUpUsage(t)

	// First attempt: 503. The batch stays undelivered, the window has a
	// retry 5 s later, and the second window waits behind it.
	require.ErrorContains(t, f.stepBilling(t), "not accepted")
	got := f.ep.requests()
	require.Len(t, got, 1)
	require.Equal(t, keys[0], got[0].header.Get(webhook.HeaderID))
	require.False(t, f.passed(t, billing.SinkID, f.lastPosition(t)), "the cursor waits for the endpoint")
	var attempts int
	var status int32
	var next time.Time
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT attempts, last_status, next_attempt_at FROM billing_deliveries WHERE key = $1",
		keys[0]).Scan(&attempts, &status, &next))
	require.Equal(t, [2]int{1, 503}, [2]int{attempts, int(status)})
	require.WithinDuration(t, f.d.Now(t).Add(5*time.Second), next, 0)

	// Not due yet: nothing is sent.
	require.ErrorContains(t, f.stepBilling(t), "next attempt in 5s")
	require.Len(t, f.ep.requests(), 1)

	// Due: both windows go, and the batch is delivered.
	f.d.AdvanceSimClock(t, 5*time.Second)
	require.NoError(t, f.stepBilling(t))
	got = f.ep.requests()
	require.Len(t, got, 3)
	now := f.d.Now(t)
	for i, want := range []struct {
		key        string
		reservedMs int64
	}{{keys[0], 3600_000}, {keys[0], 3600_000}, {keys[1], 1800_000}} {
		r := got[i]
		require.Equal(t, want.key, r.header.Get(webhook.HeaderID), "request %d", i)
		require.Equal(t, want.key, r.header.Get(billing.HeaderIdempotencyKey), "request %d", i)
		require.NoError(t, webhook.VerifyAt(f.secret, r.header, r.body, now), "request %d is signed", i)
		w := r.window
		require.Equal(t, want.key, w.Key)
		require.Equal(t, [3]string{alloc, id, "acme"}, [3]string{w.AllocationID, w.ReservationID, w.Tenant})
		require.Equal(t, want.reservedMs, w.ReservedMs)
		require.Equal(t, want.reservedMs, w.DeviceMs, "one GPU")
		require.Equal(t, [3]int64{4, 2048, 20}, [3]int64{w.VCPU, w.MemoryMB, w.DiskGB})
		require.Equal(t, "gpu", w.GPUKind)
		require.True(t, w.Final)
	}
	var delivered int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM billing_deliveries WHERE delivered_at IS NOT NULL").Scan(&delivered))
	require.Equal(t, 2, delivered)

	// Nothing new in the log: nothing more is sent.
	require.NoError(t, f.stepBilling(t))
	require.Len(t, f.ep.requests(), 3)
}

// After a crash that lost everything but the log (the cursor never saved,
// the attempts never recorded), the same windows go again with the same
// keys: the receiver's deduplication is what makes billing exactly once.
func TestBillingRedeliveryKeepsKeys(t *testing.T) {
	t.Parallel()
	f := setup(t, 0)
	_, alloc := f.usedReservation(t)
	f.catchUpUsage(t)
	require.NoError(t, f.stepBilling(t))
	first := f.ep.requests()
	require.Len(t, first, 2)

	_, err := f.d.Pool.Exec(f.ctx, "DELETE FROM billing_deliveries")
	require.NoError(t, err)
	_, err = f.d.Pool.Exec(f.ctx, "DELETE FROM outbox_cursors WHERE sink = $1", billing.SinkID)
	require.NoError(t, err)
	require.NoError(t, f.stepBilling(t))
	all := f.ep.requests()
	require.Len(t, all, 4)
	for i := range 2 {
		require.Equal(t, first[i].header.Get(webhook.HeaderID), all[2+i].header.Get(webhook.HeaderID))
		require.Equal(t, first[i].window, all[2+i].window)
		require.Contains(t, all[2+i].window.Key, "cmp:"+alloc+":")
	}
}

// A reservation that never held anything (cancelled while pending) sends
// nothing, and the batch is delivered at once.
func TestBillingSkipsUnplacedReservations(t *testing.T) {
	t.Parallel()
	f := setup(t, 0)
	res, err := f.h.CreateReservation(f.ctx, commandstest.TenantA, commands.CreateReservation{PoolID: commandstest.Pool,
		GPUs: 8, Start: pgtest.SimEpoch, End: pgtest.SimEpoch.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, core.ReservationPending, res.Reservation.State)
	_, err = f.h.CancelReservation(f.ctx, commandstest.TenantA, commands.CancelReservation{ReservationID: res.Reservation.ID})
	require.NoError(t, err)
	require.NoError(t, f.stepBilling(t), "no placed reservation ended: the projection need not be waited for")
	require.Empty(t, f.ep.requests())
}

// New refuses what could never be delivered or verified.
func TestBillingConfigChecked(t *testing.T) {
	t.Parallel()
	for _, c := range []billing.Config{
		{URL: "", Secret: webhook.NewSecret()},
		{URL: "ftp://billing.example.com", Secret: webhook.NewSecret()},
		{URL: "https://billing.example.com", Secret: "not-a-secret"},
		{URL: "https://billing.example.com", Secret: "whsec_c2hvcnQ="},
	} {
		_, err := billing.New(nil, c, nil)
		require.Error(t, err, "%+v", c)
	}
	_, err := billing.New(nil, billing.Config{URL: "https://billing.example.com", Secret: webhook.NewSecret()}, nil)
	require.NoError(t, err)
}

// A delivery whose next attempt is due after its MaxWait waits MaxWait out
// before handing the batch back, rather than at once: the dispatcher polls
// every second and logs each hand-back, so an endpoint that was down made
// one ERROR line a second (seen with examples/billing-consumer started
// after `make run`) instead of about one a minute (docs/concepts/billing.md).
func TestBillingWaitsOutMaxWaitBeforeHandingBack(t *testing.T) {
	t.Parallel()
	f := setup(t, 1)
	srv := httptest.NewServer(f.ep)
	t.Cleanup(srv.Close)
	sink, err := billing.New(f.d.Pool, billing.Config{URL: srv.URL, Secret: f.secret,
		Schedule: []time.Duration{time.Hour}, MaxWait: time.Minute}, nil)
	require.NoError(t, err)
	disp := outbox.NewDispatcher(f.d.Pool, "waiter", sink, nil)
	f.usedReservation(t)
	f.catchUpUsage(t)

	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() {
		_, err := disp.RunOnce(ctx)
		done <- err
	}()
	require.Eventually(t, func() bool { return len(f.ep.requests()) == 1 }, waitFor, 2*time.Millisecond, "the first attempt, refused")
	require.Never(t, func() bool { return len(done) > 0 }, 200*time.Millisecond, 5*time.Millisecond,
		"the next attempt is an hour away: the delivery waits its minute out before handing the batch back")
	cancel()
	require.Error(t, <-done)
	require.Len(t, f.ep.requests(), 1)
}
