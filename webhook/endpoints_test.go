package webhook_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/webhook"
)

func TestEndpointsAreTenantScoped(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	ep := f.createEndpoint(t, acmeMember, "https://hooks.acme.example/x", "reservation.booked")
	require.Regexp(t, `^we_[0-9a-f]{24}$`, ep.ID)
	require.Equal(t, "acme", ep.Tenant)
	requireEvent(t, f, webhook.EventEndpointCreated, ep.ID, 1)

	_, err := f.svc.GetEndpoint(ctx, globexMember, ep.ID)
	require.Equal(t, core.CodeNotFound, core.CodeOf(err))
	_, err = f.svc.PatchEndpoint(ctx, globexMember, ep.ID, webhook.PatchEndpoint{})
	require.Equal(t, core.CodeNotFound, core.CodeOf(err))
	_, err = f.svc.DeleteEndpoint(ctx, globexMember, ep.ID)
	require.Equal(t, core.CodeNotFound, core.CodeOf(err))
	_, err = f.svc.ListAttempts(ctx, globexMember, ep.ID, "", 0)
	require.Equal(t, core.CodeNotFound, core.CodeOf(err))

	for _, a := range []core.Actor{acmeViewer, operator} {
		got, err := f.svc.GetEndpoint(ctx, a, ep.ID)
		require.NoError(t, err)
		require.Equal(t, ep.ID, got.ID)
	}
	_, err = f.svc.CreateEndpoint(ctx, acmeViewer, webhook.CreateEndpoint{URL: "https://x.example"})
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err))
	_, err = f.svc.RotateSecret(ctx, acmeViewer, ep.ID)
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err))
	_, err = f.svc.CreateEndpoint(ctx, acmeMember, webhook.CreateEndpoint{Tenant: "globex", URL: "https://x.example"})
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err))

	theirs := f.createEndpoint(t, globexMember, "https://hooks.globex.example/")
	page, err := f.svc.ListEndpoints(ctx, acmeMember, "", 0)
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	page, err = f.svc.ListEndpoints(ctx, operator, "", 1)
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.NotEmpty(t, page.NextCursor)
	next, err := f.svc.ListEndpoints(ctx, operator, page.NextCursor, 1)
	require.NoError(t, err)
	require.Len(t, next.Items, 1)
	require.Empty(t, next.NextCursor)
	require.ElementsMatch(t, []string{ep.ID, theirs.ID}, []string{page.Items[0].ID, next.Items[0].ID})
}

func TestEndpointValidationAndPatch(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	for name, in := range map[string]webhook.CreateEndpoint{
		"userinfo":   {URL: "https://u:p@x.example/"},
		"scheme":     {URL: "gopher://x.example/"},
		"event type": {URL: "https://x.example/", EventTypes: []string{"Not A Type"}},
		"unknown":    {URL: "https://x.example/", EventTypes: []string{"reservation.nope"}},
		"fleet":      {URL: "https://x.example/", EventTypes: []string{core.EventReservationBooked, "node.unreachable"}},
	} {
		_, err := f.svc.CreateEndpoint(ctx, acmeMember, in)
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), name)
		if name == "unknown" {
			require.ErrorContains(t, err, "reservation.* are reservation.pending, reservation.booked", "the types meant")
		}
	}
	ep := f.createEndpoint(t, acmeMember, "https://x.example/", "reservation.released", "instance.failed", "instance.failed")
	require.Equal(t, []string{"instance.failed", "reservation.released"}, ep.EventTypes, "sorted, without duplicates")

	url, desc, types := "https://y.example/hook", "prod", []string{}
	got, err := f.svc.PatchEndpoint(ctx, acmeMember, ep.ID, webhook.PatchEndpoint{URL: &url, Description: &desc, EventTypes: &types})
	require.NoError(t, err)
	require.Equal(t, url, got.URL)
	require.Equal(t, desc, got.Description)
	require.Empty(t, got.EventTypes)
	require.Equal(t, ep.Version+1, got.Version)
	_, err = f.svc.PatchEndpoint(ctx, acmeMember, ep.ID, webhook.PatchEndpoint{IfVersion: ep.Version, Description: &desc})
	require.Equal(t, core.CodeConflict, core.CodeOf(err))
	requireEvent(t, f, webhook.EventEndpointUpdated, ep.ID, 1)

	_, err = f.svc.DeleteEndpoint(ctx, acmeMember, ep.ID)
	require.NoError(t, err)
	_, err = f.svc.GetEndpoint(ctx, acmeMember, ep.ID)
	require.Equal(t, core.CodeNotFound, core.CodeOf(err))
	requireEvent(t, f, webhook.EventEndpointDeleted, ep.ID, 1)
}

// After a rotation, deliveries carry both signatures for the overlap, and
// only the new one afterwards.
func TestRotateSecretSignsWithBothDuringOverlap(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	rcv := newReceiver(t, respond{status: http.StatusOK})
	ep := f.createEndpoint(t, acmeMember, rcv.URL, "reservation.booked")
	rotated, err := f.svc.RotateSecret(ctx, acmeMember, ep.ID)
	require.NoError(t, err)
	require.NotEqual(t, ep.Secret, rotated.Secret)
	requireEvent(t, f, webhook.EventEndpointSecretRotated, ep.ID, 1)

	f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.booked"))
	require.Equal(t, 1, f.runWorker(t))
	now := f.pg.Now(t)
	req := rcv.requests()[0]
	require.NoError(t, webhook.VerifyAt(ep.Secret, req.header, req.body, now), "old secret still accepted")
	require.NoError(t, webhook.VerifyAt(rotated.Secret, req.header, req.body, now))

	f.pg.AdvanceSimClock(t, 24*time.Hour)
	f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.booked"))
	require.Equal(t, 1, f.runWorker(t))
	now = f.pg.Now(t)
	req = rcv.requests()[1]
	require.ErrorIs(t, webhook.VerifyAt(ep.Secret, req.header, req.body, now), webhook.ErrNoMatch, "overlap over")
	require.NoError(t, webhook.VerifyAt(rotated.Secret, req.header, req.body, now))
}

// Recover re-sends what the endpoint missed since T: events that arrived
// while it was disabled and deliveries that were abandoned, but not those
// already acknowledged or older than T.
func TestRecoverReplaysMissedEvents(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	rcv := newReceiver(t, respond{status: http.StatusOK}, respond{status: http.StatusGone}, respond{status: http.StatusOK})
	ep := f.createEndpoint(t, acmeMember, rcv.URL, "reservation.booked")

	before := f.emit(t, "acme", "reservation.booked") // delivered: 200
	f.scheduled(t, ep.ID, before)
	require.Equal(t, 1, f.runWorker(t))
	since := f.pg.AdvanceSimClock(t, time.Minute)
	acked := f.emit(t, "acme", "reservation.booked") // 410: endpoint disabled
	d := f.scheduled(t, ep.ID, acked)
	require.Equal(t, 1, f.runWorker(t))
	require.Equal(t, webhook.StateAbandoned, f.delivery(t, d.ID).State)
	missed := f.emit(t, "acme", "reservation.booked") // not scheduled: disabled
	f.emit(t, "acme", "node.cordoned")                // filtered out
	_, err := f.disp.RunOnce(ctx)
	require.NoError(t, err)

	_, err = f.svc.RecoverEndpoint(ctx, acmeMember, ep.ID, since)
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "disabled endpoints are enabled first")
	on := true
	_, err = f.svc.PatchEndpoint(ctx, acmeMember, ep.ID, webhook.PatchEndpoint{Enabled: &on})
	require.NoError(t, err)
	res, err := f.svc.RecoverEndpoint(ctx, acmeMember, ep.ID, since)
	require.NoError(t, err)
	require.Equal(t, 2, res.Scheduled)
	require.False(t, res.Truncated)
	var oldest time.Time // what a consumer compares since with: older events are gone
	require.NoError(t, f.pg.Pool.QueryRow(ctx, "SELECT time FROM outbox ORDER BY txid, seq LIMIT 1").Scan(&oldest))
	require.NotNil(t, res.RetainedSince)
	require.True(t, oldest.Equal(*res.RetainedSince), "%s, want %s", res.RetainedSince, oldest)

	require.Equal(t, 2, f.runWorker(t))
	var ids []string
	for _, r := range rcv.requests() {
		ids = append(ids, r.header.Get(webhook.HeaderID))
	}
	require.Equal(t, before.ID.String(), ids[0])
	require.Equal(t, acked.ID.String(), ids[1])
	require.ElementsMatch(t, []string{acked.ID.String(), missed.ID.String()}, ids[2:])
	requireEvent(t, f, webhook.EventEndpointRecovered, ep.ID, 1)
}

// Recover never sends an endpoint events older than the endpoint itself,
// whatever `since` says: it did not subscribe to them.
func TestRecoverSendsNothingOlderThanTheEndpoint(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	since := f.pg.Now(t)
	f.emit(t, "acme", "reservation.booked") // before the endpoint
	_, err := f.disp.RunOnce(ctx)           // and scheduled before it, for no one
	require.NoError(t, err)
	f.pg.AdvanceSimClock(t, time.Minute)
	rcv := newReceiver(t, respond{status: http.StatusOK})
	ep := f.createEndpoint(t, acmeMember, rcv.URL, "reservation.booked")
	res, err := f.svc.RecoverEndpoint(ctx, acmeMember, ep.ID, since)
	require.NoError(t, err)
	require.Zero(t, res.Scheduled)
}

// Recover's per-call limit counts the events it re-sends, not the ones the
// endpoint already acknowledged: with acknowledged deliveries first in the
// window, a limit spent on them scheduled nothing of what was missed and
// said it was not truncated, so the missed events were silently never sent.
func TestRecoverLimitSkipsAcknowledgedEvents(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{RecoverLimit: 2})
	ctx := context.Background()
	rcv := newReceiver(t, respond{status: http.StatusOK})
	ep := f.createEndpoint(t, acmeMember, rcv.URL, "reservation.booked")
	since := f.pg.Now(t)

	for range 2 { // acknowledged: 200
		f.scheduled(t, ep.ID, f.emit(t, "acme", "reservation.booked"))
	}
	require.Equal(t, 2, f.runWorker(t))
	missed := f.missWhileDisabled(t, ep.ID, 3)

	res, err := f.svc.RecoverEndpoint(ctx, acmeMember, ep.ID, since)
	require.NoError(t, err)
	require.Equal(t, 2, res.Scheduled, "the limit is spent on missed events, not acknowledged ones")
	require.True(t, res.Truncated, "a third missed event is left for the next recover")
	require.Equal(t, 2, f.runWorker(t))

	f.pg.AdvanceSimClock(t, 2*webhook.DefaultRecoverInterval)
	res, err = f.svc.RecoverEndpoint(ctx, acmeMember, ep.ID, since)
	require.NoError(t, err)
	require.Equal(t, 1, res.Scheduled, "the same recover again sends the rest")
	require.False(t, res.Truncated)
	require.Equal(t, 1, f.runWorker(t))

	var got []string
	for _, r := range rcv.requests()[2:] {
		got = append(got, r.header.Get(webhook.HeaderID))
	}
	require.ElementsMatch(t, missed, got)
}

// A recover cut short by its limit goes on with the rest when it runs
// again with the same since, even before the receiver acknowledged the
// first batch: it used to pick the same first events again (pending, so
// not acknowledged), and a slow receiver's missed events past the limit
// were never scheduled.
func TestRecoverAgainGoesOnBeforeTheFirstBatchIsAcknowledged(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{RecoverLimit: 2})
	ctx := context.Background()
	rcv := newReceiver(t, respond{status: http.StatusOK})
	ep := f.createEndpoint(t, acmeMember, rcv.URL, "reservation.booked")
	since := f.pg.Now(t)
	missed := f.missWhileDisabled(t, ep.ID, 3)

	res, err := f.svc.RecoverEndpoint(ctx, acmeMember, ep.ID, since)
	require.NoError(t, err)
	require.Equal(t, 2, res.Scheduled)
	require.True(t, res.Truncated)
	f.pg.AdvanceSimClock(t, 2*webhook.DefaultRecoverInterval) // nothing sent meanwhile
	res, err = f.svc.RecoverEndpoint(ctx, acmeMember, ep.ID, since)
	require.NoError(t, err)
	require.Equal(t, 1, res.Scheduled, "the rest, not the first two again")
	require.False(t, res.Truncated)

	require.Equal(t, 3, f.runWorker(t))
	var got []string
	for _, r := range rcv.requests() {
		got = append(got, r.header.Get(webhook.HeaderID))
	}
	require.ElementsMatch(t, missed, got, "each missed event once")
}

// missWhileDisabled disables the endpoint, emits n events of acme's that it
// therefore never schedules, lets the dispatcher pass them, and enables it
// again: what a recover is for. It returns the events' ids.
func (f *fixture) missWhileDisabled(t *testing.T, endpointID string, n int) []string {
	t.Helper()
	ctx := context.Background()
	off, on := false, true
	_, err := f.svc.PatchEndpoint(ctx, acmeMember, endpointID, webhook.PatchEndpoint{Enabled: &off})
	require.NoError(t, err)
	var missed []string
	for range n {
		missed = append(missed, f.emit(t, "acme", "reservation.booked").ID.String())
	}
	read := 0 // webhook_endpoint.updated and the missed events
	require.Eventually(t, func() bool {
		n, err := f.disp.RunOnce(ctx)
		require.NoError(t, err)
		read += n
		return read >= len(missed)+1
	}, 10*time.Second, 5*time.Millisecond)
	_, err = f.svc.PatchEndpoint(ctx, acmeMember, endpointID, webhook.PatchEndpoint{Enabled: &on})
	require.NoError(t, err)
	return missed
}
