package webhook_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/webhook"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var (
	acmeMember   = core.Actor{TokenID: "tok_a", Tenant: "acme", Identity: "alice", Role: core.RoleMember}
	acmeViewer   = core.Actor{TokenID: "tok_v", Tenant: "acme", Identity: "vic", Role: core.RoleViewer}
	globexMember = core.Actor{TokenID: "tok_g", Tenant: "globex", Identity: "hank", Role: core.RoleMember}
	operator     = core.Actor{TokenID: "tok_o", Tenant: "ops", Identity: "root", Role: core.RoleOperator}
)

// fixture is a webhook service on a fresh database and simulated clock,
// with the scheduler's dispatcher and a work-queue worker running the
// delivery handler, both driven by hand through RunOnce.
type fixture struct {
	pg     *pgtest.DB
	svc    *webhook.Service
	disp   *outbox.Dispatcher
	worker *workqueue.Worker
}

// noJitter makes the jitter factor exactly zero: 2*0.5-1.
func noJitter() float64 { return 0.5 }

func setup(t *testing.T, cfg webhook.Config) *fixture {
	t.Helper()
	pg := pgtest.New(t)
	logger := slog.New(slog.DiscardHandler)
	cfg.AllowPrivate = true // receivers are httptest servers on loopback
	if cfg.Rand == nil {
		cfg.Rand = noJitter
	}
	svc := webhook.New(pg.Pool, commands.New(pg.Pool, commands.Config{}), cfg, logger)
	w := workqueue.NewWorker(pg.Pool, "test-worker", clock.New(logger), logger)
	w.Handle(webhook.KindDeliver, svc.Deliver)
	w.HandlePrefetch(webhook.KindDeliver, svc.Prefetch)
	return &fixture{pg: pg, svc: svc, disp: outbox.NewTxDispatcher(pg.Pool, "test-dispatcher", svc.Scheduler(), logger), worker: w}
}

// emit appends one event for tenant in its own transaction.
func (f *fixture) emit(t *testing.T, tenant, typ string) core.Event {
	t.Helper()
	ev, err := core.NewEvent(typ, tenant, "things/1", map[string]any{"n": 1})
	require.NoError(t, err)
	require.NoError(t, pg.InTx(context.Background(), f.pg.Pool, func(tx pgx.Tx) error {
		_, err := outbox.Append(context.Background(), db.New(tx), ev)
		return err
	}))
	return ev
}

// scheduled runs the scheduler until the delivery of ev to endpoint exists
// (the outbox frontier is cluster-wide, so another test's open transaction
// may hide ev for a moment) and returns it.
func (f *fixture) scheduled(t *testing.T, endpointID string, ev core.Event) db.WebhookDelivery {
	t.Helper()
	ctx := context.Background()
	var d db.WebhookDelivery
	require.Eventually(t, func() bool {
		_, err := f.disp.RunOnce(ctx)
		require.NoError(t, err)
		d, err = f.pg.Q.WebhookDeliveryByEndpointEvent(ctx, db.WebhookDeliveryByEndpointEventParams{EndpointID: endpointID, EventID: ev.ID})
		return err == nil
	}, 10*time.Second, 5*time.Millisecond)
	return d
}

func (f *fixture) delivery(t *testing.T, id uuid.UUID) db.WebhookDelivery {
	t.Helper()
	d, err := f.pg.Q.WebhookDeliveryGet(context.Background(), id)
	require.NoError(t, err)
	return d
}

// notBefore is when the delivery's work item runs next.
func (f *fixture) notBefore(t *testing.T, id uuid.UUID) time.Time {
	t.Helper()
	row, err := f.pg.Q.WorkQueueGet(context.Background(), db.WorkQueueGetParams{Kind: webhook.KindDeliver, Key: id.String()})
	require.NoError(t, err)
	return row.NotBefore
}

func (f *fixture) runWorker(t *testing.T) int {
	t.Helper()
	n, err := f.worker.RunOnce(context.Background())
	require.NoError(t, err)
	return n
}

func (f *fixture) createEndpoint(t *testing.T, actor core.Actor, url string, types ...string) webhook.EndpointWithSecret {
	t.Helper()
	e, err := f.svc.CreateEndpoint(context.Background(), actor, webhook.CreateEndpoint{URL: url, EventTypes: types})
	require.NoError(t, err)
	return e
}

// received is one request a receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is an httptest server on loopback whose n-th response is
// script[n] (the last entry repeats). It records what it receives.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []received
	done chan struct{}
}

// respond is one scripted response; hang blocks until the client gives up.
type respond struct {
	status int
	header map[string]string
	hang   bool
}

func newReceiver(t *testing.T, script ...respond) *receiver {
	t.Helper()
	r := &receiver{done: make(chan struct{})}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.got)
		r.got = append(r.got, received{header: req.Header.Clone(), body: body})
		r.mu.Unlock()
		step := script[min(n, len(script)-1)]
		if step.hang {
			select {
			case <-req.Context().Done():
			case <-r.done:
			}
			return
		}
		for k, v := range step.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(step.status)
		_, _ = w.Write([]byte("response body"))
	}))
	t.Cleanup(func() { close(r.done); r.Server.Close() })
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}
