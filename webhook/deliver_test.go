package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/webhook"
)

// A receiver that answers 500, then times out, then 429 with Retry-After,
// then 410: each attempt happens at its scheduled simulated time, every
// attempt carries the same webhook-id and a valid signature, and the 410
// disables the endpoint with an event.
func TestDeliveryScheduleThroughFailuresUntilGone(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{Timeout: 300 * time.Millisecond})
	ctx := context.Background()
	rcv := newReceiver(t,
		respond{status: http.StatusInternalServerError},
		respond{hang: true},
		respond{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "120"}},
		respond{status: http.StatusGone},
	)
	ep := f.createEndpoint(t, acmeMember, rcv.URL, "reservation.booked")
	ev := f.emit(t, "acme", "reservation.booked")
	d := f.scheduled(t, ep.ID, ev)
	t0 := f.pg.Now(t)

	// Attempt 1, immediately: 500, next in 5 s.
	require.Equal(t, 1, f.runWorker(t))
	require.Equal(t, t0.Add(5*time.Second), f.notBefore(t, d.ID))
	require.Equal(t, 0, f.runWorker(t), "nothing is due before the schedule says so")
	f.pg.AdvanceSimClock(t, 5*time.Second-time.Millisecond)
	require.Equal(t, 0, f.runWorker(t))

	// Attempt 2 at +5 s: the receiver hangs until the client times out.
	t1 := f.pg.AdvanceSimClock(t, time.Millisecond)
	require.Equal(t, 1, f.runWorker(t))
	require.Equal(t, t1.Add(5*time.Minute), f.notBefore(t, d.ID))

	// Attempt 3 at +5 min: 429 with Retry-After 120 s, earlier than the
	// schedule's 30 min, so the schedule stands.
	t2 := f.pg.AdvanceSimClock(t, 5*time.Minute)
	require.Equal(t, 1, f.runWorker(t))
	require.Equal(t, t2.Add(30*time.Minute), f.notBefore(t, d.ID))
	got := f.delivery(t, d.ID)
	require.Equal(t, webhook.StatePending, got.State)
	require.EqualValues(t, 3, got.Attempts)

	// Attempt 4 at +30 min: 410 disables the endpoint and ends the delivery.
	t3 := f.pg.AdvanceSimClock(t, 30*time.Minute)
	require.Equal(t, 1, f.runWorker(t))
	got = f.delivery(t, d.ID)
	require.Equal(t, webhook.StateAbandoned, got.State)
	require.EqualValues(t, 4, got.Attempts)
	_, err := f.pg.Q.WorkQueueGet(ctx, db.WorkQueueGetParams{Kind: webhook.KindDeliver, Key: d.ID.String()})
	require.ErrorIs(t, err, pgx.ErrNoRows, "the work item is done")
	e, err := f.svc.GetEndpoint(ctx, acmeMember, ep.ID)
	require.NoError(t, err)
	require.False(t, e.Enabled)
	require.Equal(t, webhook.ReasonGone, e.DisabledReason)
	requireEvent(t, f, webhook.EventEndpointDisabled, ep.ID, 1)

	// Four requests, at the four scheduled times, one webhook-id, all
	// verifying with the endpoint's secret.
	reqs := rcv.requests()
	require.Len(t, reqs, 4)
	for i, at := range []time.Time{t0, t1, t2, t3} {
		h := reqs[i].header
		require.Equal(t, ev.ID.String(), h.Get(webhook.HeaderID), "attempt %d", i+1)
		require.Equal(t, strconv.FormatInt(at.Unix(), 10), h.Get(webhook.HeaderTimestamp), "attempt %d", i+1)
		require.NoError(t, webhook.VerifyAt(ep.Secret, h, reqs[i].body, at), "attempt %d", i+1)
		var body core.Event
		require.NoError(t, json.Unmarshal(reqs[i].body, &body))
		require.Equal(t, ev.ID, body.ID)
		require.Equal(t, "reservation.booked", body.Type)
	}
	require.Equal(t, reqs[0].body, reqs[3].body, "the body is the same on every attempt")

	// The attempts are listed newest first, with status and snippet.
	page, err := f.svc.ListAttempts(ctx, acmeMember, ep.ID, "", 0)
	require.NoError(t, err)
	require.Len(t, page.Items, 4)
	statuses := []int32{page.Items[0].Status, page.Items[1].Status, page.Items[2].Status, page.Items[3].Status}
	require.Equal(t, []int32{410, 429, 0, 500}, statuses)
	require.Equal(t, "timeout", page.Items[2].Error)
	require.Equal(t, "response body", page.Items[3].ResponseSnippet)

	// Nothing further happens, however long we wait.
	f.pg.AdvanceSimClock(t, 48*time.Hour)
	require.Equal(t, 0, f.runWorker(t))
	require.Len(t, rcv.requests(), 4)
}

// requireEvent asserts that the outbox holds n events of typ about
// endpoint. It polls: the reader sees only rows below the cluster-wide
// frontier, which another test's open transaction may hold back briefly.
func requireEvent(t *testing.T, f *fixture, typ, endpointID string, n int) {
	t.Helper()
	count := 0
	require.Eventually(t, func() bool {
		events, err := outbox.ReadAfter(context.Background(), f.pg.Q, outbox.Position{}, 1000)
		require.NoError(t, err)
		count = 0
		for _, e := range events {
			if e.Type == typ && e.Subject == webhook.EndpointSubject(endpointID) {
				count++
				var data map[string]any
				require.NoError(t, json.Unmarshal(e.Data, &data))
				require.Equal(t, endpointID, data["endpointId"])
			}
		}
		return count >= n
	}, 10*time.Second, 5*time.Millisecond, "%s events about %s", typ, endpointID)
	require.Equal(t, n, count, "%s events about %s", typ, endpointID)
}

// A receiver that hangs costs its own delivery a timeout; the healthy
// endpoint's delivery of the same event succeeds in the same run.
func TestDeadEndpointDoesNotBlockHealthyOne(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{Timeout: 300 * time.Millisecond})
	dead := newReceiver(t, respond{hang: true})
	healthy := newReceiver(t, respond{status: http.StatusNoContent})
	deadEP := f.createEndpoint(t, acmeMember, dead.URL, "reservation.booked")
	okEP := f.createEndpoint(t, acmeMember, healthy.URL, "reservation.booked")
	ev := f.emit(t, "acme", "reservation.booked")
	dd := f.scheduled(t, deadEP.ID, ev)
	od := f.scheduled(t, okEP.ID, ev)

	require.Equal(t, 2, f.runWorker(t))
	require.Equal(t, webhook.StateSucceeded, f.delivery(t, od.ID).State)
	require.Len(t, healthy.requests(), 1)
	got := f.delivery(t, dd.ID)
	require.Equal(t, webhook.StatePending, got.State)
	require.EqualValues(t, 1, got.Attempts)
	require.Equal(t, f.pg.Now(t).Add(5*time.Second), f.notBefore(t, dd.ID))

	// The healthy one is done and never sent again.
	f.pg.AdvanceSimClock(t, 5*time.Second)
	require.Equal(t, 1, f.runWorker(t), "only the dead endpoint's retry runs")
	require.Len(t, healthy.requests(), 1)
	e, err := f.svc.GetEndpoint(context.Background(), acmeMember, okEP.ID)
	require.NoError(t, err)
	require.Nil(t, e.FailingSince)
}

// An endpoint failing continuously for five days is disabled, once, with
// an event; four days of failure are not enough.
func TestContinuousFailureForFiveDaysDisables(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	rcv := newReceiver(t, respond{status: http.StatusServiceUnavailable})
	ep := f.createEndpoint(t, acmeMember, rcv.URL, "reservation.booked")
	t0 := f.pg.Now(t)

	d1 := f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.booked"))
	require.Equal(t, 1, f.runWorker(t))
	e, err := f.svc.GetEndpoint(ctx, acmeMember, ep.ID)
	require.NoError(t, err)
	require.NotNil(t, e.FailingSince)
	require.True(t, e.FailingSince.Equal(t0))

	f.pg.AdvanceSimClock(t, 4*24*time.Hour)
	d2 := f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.booked"))
	require.Equal(t, 2, f.runWorker(t), "the first delivery's retry and the new one")
	e, err = f.svc.GetEndpoint(ctx, acmeMember, ep.ID)
	require.NoError(t, err)
	require.True(t, e.Enabled, "four days of failure")

	f.pg.AdvanceSimClock(t, 24*time.Hour)
	d3 := f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.booked"))
	require.GreaterOrEqual(t, f.runWorker(t), 1)
	e, err = f.svc.GetEndpoint(ctx, acmeMember, ep.ID)
	require.NoError(t, err)
	require.False(t, e.Enabled)
	require.Equal(t, webhook.ReasonFailing, e.DisabledReason)
	requireEvent(t, f, webhook.EventEndpointDisabled, ep.ID, 1)

	// Whatever was still pending is abandoned when its item next runs.
	f.pg.AdvanceSimClock(t, 24*time.Hour)
	f.runWorker(t)
	for _, d := range []db.WebhookDelivery{d1, d2, d3} {
		require.Equal(t, webhook.StateAbandoned, f.delivery(t, d.ID).State)
	}

	// Re-enabling clears the failure state.
	on := true
	e, err = f.svc.PatchEndpoint(ctx, acmeMember, ep.ID, webhook.PatchEndpoint{Enabled: &on})
	require.NoError(t, err)
	require.True(t, e.Enabled)
	require.Nil(t, e.FailingSince)
	require.Empty(t, e.DisabledReason)
}

// Patching a failing endpoint that is enabled (its description, its URL,
// or enabling it again) leaves the five-day clock running: only
// re-enabling a disabled endpoint starts it afresh. Otherwise a tenant
// could keep a dead endpoint, and its deliveries, alive for ever.
func TestPatchingAFailingEndpointKeepsItsFailureClock(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	rcv := newReceiver(t, respond{status: http.StatusServiceUnavailable})
	ep := f.createEndpoint(t, acmeMember, rcv.URL, "reservation.booked")
	t0 := f.pg.Now(t)
	f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.booked"))
	require.Equal(t, 1, f.runWorker(t))

	f.pg.AdvanceSimClock(t, 4*24*time.Hour)
	other := newReceiver(t, respond{status: http.StatusServiceUnavailable})
	desc, on := "still here", true
	for _, patch := range []webhook.PatchEndpoint{{Description: &desc}, {URL: &other.URL}, {Enabled: &on}} {
		e, err := f.svc.PatchEndpoint(ctx, acmeMember, ep.ID, patch)
		require.NoError(t, err)
		require.NotNil(t, e.FailingSince, "%+v", patch)
		require.True(t, e.FailingSince.Equal(t0), "%+v: the clock runs from the first failure", patch)
	}

	f.pg.AdvanceSimClock(t, 24*time.Hour)
	f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.booked"))
	require.GreaterOrEqual(t, f.runWorker(t), 1)
	e, err := f.svc.GetEndpoint(ctx, acmeMember, ep.ID)
	require.NoError(t, err)
	require.False(t, e.Enabled, "five days after the first failure, patches or not")
	require.Equal(t, webhook.ReasonFailing, e.DisabledReason)
}
