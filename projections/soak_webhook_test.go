package projections_test

import (
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/webhook"
)

// soakHooks is acme's webhook endpoint in the soak: the service, the
// receiver, and its outages.
type soakHooks struct {
	svc      *webhook.Service
	endpoint string
	rx       *hookReceiver
	// outages are the receiver's outages to come, [from, to) in days since
	// the soak's start: it answers 503 meanwhile. At each one's end acme
	// re-enables the endpoint if it was disabled (the first is longer than
	// the five days of failures after which it is) and recovers everything
	// since a little before the outage began.
	outages [][2]float64
	// since is when the outage under way began.
	since time.Time
}

// hookReceiver is the receiver, in process (an http.RoundTripper: no
// port): it accepts every event while up, recording its webhook-id (the
// event id), and answers 503 while down.
type hookReceiver struct {
	mu   sync.Mutex
	down bool
	got  map[string]bool
}

func (r *hookReceiver) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	status := http.StatusNoContent
	if r.down {
		status = http.StatusServiceUnavailable
	} else {
		r.got[req.Header.Get(webhook.HeaderID)] = true
	}
	return &http.Response{StatusCode: status, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

func (r *hookReceiver) setDown(down bool) {
	r.mu.Lock()
	r.down = down
	r.mu.Unlock()
}

func (r *hookReceiver) received(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[id]
}

// setupWebhooks gives acme an endpoint for every event type, runs the
// webhook scheduler with the projections and the deliveries on the soak's
// worker.
func (s *soak) setupWebhooks(t *testing.T) {
	t.Helper()
	rx := &hookReceiver{got: map[string]bool{}}
	svc := webhook.New(s.d.Pool, s.h, webhook.Config{AllowPrivate: true, Client: &http.Client{Transport: rx},
		SlotWait: -1, Rand: func() float64 { return 0.5 }}, quiet)
	ep, err := svc.CreateEndpoint(s.ctx, tenantA, webhook.CreateEndpoint{URL: "https://hooks.acme.example/compute"})
	require.NoError(t, err)
	s.hooks = &soakHooks{svc: svc, endpoint: ep.ID, rx: rx, outages: [][2]float64{{18, 32}, {75, 77}}}
	s.disps = append(s.disps, outbox.NewTxDispatcher(s.d.Pool, "test", svc.Scheduler(), quiet))
	s.worker.Handle(webhook.KindDeliver, svc.Deliver)
	s.worker.HandlePrefetch(webhook.KindDeliver, svc.Prefetch)
}

// weather starts and ends the receiver's outages at day (since the
// soak's start); an outage's end re-enables the endpoint if it was
// disabled and recovers what was sent meanwhile.
func (s *soak) weather(t *testing.T, day float64) {
	t.Helper()
	h := s.hooks
	if h.since.IsZero() {
		if len(h.outages) > 0 && day >= h.outages[0][0] {
			h.rx.setDown(true)
			h.since = s.d.Now(t)
			s.counts["webhook outages"]++
		}
		return
	}
	if day < h.outages[0][1] {
		return
	}
	h.rx.setDown(false)
	ep, err := h.svc.GetEndpoint(s.ctx, tenantA, h.endpoint)
	require.NoError(t, err)
	if !ep.Enabled {
		s.counts["webhook endpoint disabled"]++
		enabled := true
		_, err = h.svc.PatchEndpoint(s.ctx, tenantA, h.endpoint, webhook.PatchEndpoint{Enabled: &enabled})
		require.NoError(t, err)
	}
	// From before the outage by more than a step (at most 3 days and an
	// hour): an event of the step before it began was scheduled at that
	// step's end and first attempted once the receiver was down.
	rec, err := h.svc.RecoverEndpoint(s.ctx, tenantA, h.endpoint, h.since.Add(-4*24*time.Hour))
	require.NoError(t, err)
	require.False(t, rec.Truncated)
	s.counts["webhooks recovered"] += rec.Scheduled
	h.since, h.outages = time.Time{}, h.outages[1:]
}

// requireHooksDelivered checks, while the receiver is up, that it got
// every retained event of acme's that follows the endpoint in the log
// (an endpoint is sent nothing from before it) from before the previous
// step: the
// scheduler made its delivery at that step's end at the latest, and this
// step's worker ran it (or the recover at this step's start made it
// anew).
func (s *soak) requireHooksDelivered(t *testing.T, when string) {
	t.Helper()
	h := s.hooks
	if !h.since.IsZero() || s.prevStepEnd.IsZero() {
		return
	}
	rows, err := s.d.Pool.Query(s.ctx, `SELECT id::text, type, time FROM outbox
		WHERE tenant_id = 'acme' AND time < $1
		  AND txid >= (SELECT created_txid FROM webhook_endpoints WHERE id = $2) ORDER BY txid, seq`, s.prevStepEnd, h.endpoint)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var id, typ string
		var at time.Time
		require.NoError(t, rows.Scan(&id, &typ, &at))
		require.True(t, h.rx.received(id), "%s: acme's %s event %s of %s never reached its endpoint", when, typ, id, at)
		s.counts["webhooks checked"]++
	}
	require.NoError(t, rows.Err())
}
