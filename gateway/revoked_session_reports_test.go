package gateway_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/wire"
)

// A revoked credential's connection, still open until the gateway's next
// flush drops it, can conclude none of its node's jobs: neither fail an
// assign with a refusal (which fails the tenant's reservation) nor an
// instance's start. Its reports changed both before; the revocation moved
// the session's epoch on, and a report must come in on the node's current,
// connected session.
func TestRevokedSessionsReportsChangeNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	handled := make(chan wire.Message, 16)
	g := &gateway.Gateway{ID: "gw1", Owner: "gw1-process", Commands: f.s, OnMessage: func(_ string, _ int64, m wire.Message) {
		if m.Type == wire.TypeCommandResult {
			handled <- m
		}
	}}
	require.NoError(t, g.Renew(f.ctx))
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	d, epoch := f.wireDaemon("ws://"+strings.TrimPrefix(srv.URL, "http://")+wire.Path, cred.Token)

	rsv := f.activeReservation(t)
	inst, err := f.h.CreateInstance(f.ctx, member, commands.CreateInstance{ReservationID: rsv.ID})
	require.NoError(t, err)
	_, err = g.Dispatch(f.ctx, "n1")
	require.NoError(t, err)
	assign, start := d.next(), d.next()
	require.Equal(t, wire.CommandKindAssign, assign.CommandKind)
	require.Equal(t, core.NodeCommandInstanceStart, start.CommandKind)
	require.Equal(t, epoch, assign.SessionEpoch)

	require.NoError(t, f.s.RevokeNodeCredential(f.ctx, operator, "n1", cred.ID))
	require.Equal(t, map[string]int64{"n1": epoch}, g.Sessions(), "held until the next flush")
	d.send(wire.Message{Type: wire.TypeCommandResult, CommandID: assign.CommandID, State: "failed",
		Reason: wire.RefusedPrefix + "GPU busy", ObservedGeneration: 1})
	d.send(wire.Message{Type: wire.TypeCommandResult, CommandID: start.CommandID, State: "failed", Reason: "no such image"})
	for range 2 {
		select {
		case <-handled:
		case <-time.After(10 * time.Second):
			t.Fatal("the gateway did not handle the reports")
		}
	}

	require.Equal(t, "sent", f.jobState(assign.CommandID), "the revoked session's assign result")
	require.Equal(t, "sent", f.jobState(start.CommandID), "the revoked session's start result")
	got, err := f.h.GetReservation(f.ctx, member, rsv.ID)
	require.NoError(t, err)
	require.Equal(t, core.ReservationActive, got.State)
	state, _ := f.instanceState(inst.Instance.ID)
	require.Equal(t, "requested", state)
	require.Zero(t, f.session("n1").ObservedGeneration)
	f.requireInvariants()
}
