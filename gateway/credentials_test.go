package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/gateway"
	"github.com/bettercompute/compute/wire"
)

// liveGateway serves daemon sessions on loopback; it renews and flushes
// only when the test says.
func (f *fixture) liveGateway(id string) (*gateway.Gateway, string) {
	f.t.Helper()
	g := &gateway.Gateway{ID: id, Owner: id + "-process", Commands: f.s}
	require.NoError(f.t, g.Renew(f.ctx))
	srv := httptest.NewServer(g)
	f.t.Cleanup(srv.Close)
	return g, "ws://" + strings.TrimPrefix(srv.URL, "http://") + wire.Path
}

// connect opens a daemon session with token and waits for the welcome.
func (f *fixture) connect(url, token string) (*websocket.Conn, wire.Message) {
	f.t.Helper()
	return f.connectHello(url, token, wire.Message{Type: wire.TypeHello, JournalID: "j1"})
}

// connectHello is connect with the hello given.
func (f *fixture) connectHello(url, token string, h wire.Message) (*websocket.Conn, wire.Message) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": []string{"Bearer " + token}}})
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = ws.CloseNow() })
	hello, err := json.Marshal(h)
	require.NoError(f.t, err)
	require.NoError(f.t, ws.Write(ctx, websocket.MessageText, hello))
	_, data, err := ws.Read(ctx)
	require.NoError(f.t, err)
	var welcome wire.Message
	require.NoError(f.t, json.Unmarshal(data, &welcome))
	require.Equal(f.t, wire.TypeWelcome, welcome.Type)
	return ws, welcome
}

// readUntilClosed reads ws the way a daemon does, answering the close
// handshake, and reports the close status when the connection ends.
func readUntilClosed(ctx context.Context, ws *websocket.Conn) <-chan websocket.StatusCode {
	out := make(chan websocket.StatusCode, 1)
	go func() {
		for {
			if _, _, err := ws.Read(ctx); err != nil {
				out <- websocket.CloseStatus(err)
				return
			}
		}
	}()
	return out
}

func (f *fixture) requireUnauthenticated(token string) {
	f.t.Helper()
	_, _, err := f.s.NodeSessions().AuthenticateNodeCredential(f.ctx, token)
	require.Equal(f.t, core.CodeUnauthenticated, core.CodeOf(err), "err: %v", err)
}

func (f *fixture) credentials(node string) map[string]commands.NodeCredentialInfo {
	f.t.Helper()
	list, err := f.s.ListNodeCredentials(f.ctx, operator, node)
	require.NoError(f.t, err)
	out := map[string]commands.NodeCredentialInfo{}
	for _, c := range list {
		out[c.ID] = c
	}
	return out
}

// A revoked credential no longer authenticates, and the live session opened
// with it is closed: in the database at once (a new epoch, so nothing the
// gateway still holds can write or route), on the wire at the gateway's
// next flush.
func TestRevokedCredentialCannotAuthenticateAndItsSessionIsClosed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	g, url := f.liveGateway("gw1")
	ws, welcome := f.connect(url, cred.Token)
	f.requireState("n1", core.NodeConnected)
	readCtx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()
	closed := readUntilClosed(readCtx, ws)

	err := f.s.RevokeNodeCredential(f.ctx, tenant, "n1", cred.ID)
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err), "only an operator revokes")
	require.Equal(t, core.CodeNotFound, core.CodeOf(f.s.RevokeNodeCredential(f.ctx, operator, "n1", "ncr_unknown")))
	require.Equal(t, core.CodeNotFound, core.CodeOf(f.s.RevokeNodeCredential(f.ctx, operator, "nx", cred.ID)))

	require.NoError(t, f.s.RevokeNodeCredential(f.ctx, operator, "n1", cred.ID))
	f.requireUnauthenticated(cred.Token)
	sess := f.session("n1")
	require.False(t, sess.Connected)
	require.Equal(t, "revoked", *sess.CloseReason)
	require.Greater(t, sess.SessionEpoch, welcome.SessionEpoch, "the revocation superseded the epoch")
	f.requireState("n1", core.NodeDisconnected)
	require.Equal(t, 1, f.events(core.EventNodeCredentialRevoked, "n1"))

	// The gateway's next flush drops the connection.
	require.Equal(t, map[string]int64{"n1": welcome.SessionEpoch}, g.Sessions())
	require.NoError(t, g.Flush(f.ctx))
	require.Equal(t, websocket.StatusPolicyViolation, <-closed, "closed as superseded")
	require.Empty(t, g.Sessions())

	// The credential cannot open another session.
	_, _, err = websocket.Dial(f.ctx, url, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": []string{"Bearer " + cred.Token}}})
	require.ErrorContains(t, err, "401")

	// Revoking again changes nothing.
	require.NoError(t, f.s.RevokeNodeCredential(f.ctx, operator, "n1", cred.ID))
	require.Equal(t, 1, f.events(core.EventNodeCredentialRevoked, "n1"))
	c := f.credentials("n1")[cred.ID]
	require.False(t, c.Active)
	require.NotNil(t, c.RevokedAt)

	// A new credential connects again.
	again, err := f.s.JoinNode(f.ctx, operator, "n1")
	require.NoError(t, err)
	f.connect(url, again.Token)
	f.requireState("n1", core.NodeConnected)
	f.requireInvariants()
}

// A revocation that commits between the gateway's authentication and the
// session open wins: the open is refused.
func TestSessionOpenChecksTheCredentialInItsTransaction(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	nodeID, credID, err := f.s.NodeSessions().AuthenticateNodeCredential(f.ctx, cred.Token)
	require.NoError(t, err)
	require.Equal(t, "n1", nodeID)
	require.Equal(t, cred.ID, credID)
	require.NoError(t, f.s.RevokeNodeCredential(f.ctx, operator, "n1", cred.ID))
	gw := f.gateway("gw1")
	_, err = f.s.NodeSessions().OpenNodeSession(f.ctx, commands.OpenNodeSession{NodeID: "n1", Gateway: gw, GatewayID: "gw1", JournalID: "j1",
		CredentialID: credID})
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err), "err: %v", err)
	f.requireState("n1", core.NodeRegistered)
}

// Re-joining supersedes the earlier credentials: they keep working for the
// grace (10 min by default), then fail, and a session opened with one is
// closed when the grace ends. The new credential's session is untouched.
func TestRejoinRevokesEarlierCredentialsAfterTheGrace(t *testing.T) {
	t.Parallel()
	f := setup(t)
	old := f.join("n1", "metal")
	f.gateway("gw1")
	_, err := f.s.NodeSessions().OpenNodeSession(f.ctx, commands.OpenNodeSession{NodeID: "n1", Gateway: f.gateways["gw1"], GatewayID: "gw1",
		JournalID: "j1", CredentialID: old.ID})
	require.NoError(t, err)

	joinedAt := f.d.Now(t)
	fresh, err := f.s.JoinNode(f.ctx, operator, "n1")
	require.NoError(t, err)
	creds := f.credentials("n1")
	require.True(t, creds[old.ID].Active)
	require.WithinDuration(t, joinedAt, *creds[old.ID].RevokedAt, 0)
	require.WithinDuration(t, joinedAt.Add(commands.DefaultNodeCredentialGrace), *creds[old.ID].GraceUntil, 0)
	require.True(t, creds[fresh.ID].Active)
	require.Nil(t, creds[fresh.ID].RevokedAt)
	require.Equal(t, 1, f.events(core.EventNodeCredentialRevoked, "n1"))

	// Within the grace both authenticate and the old session stays.
	f.advance(commands.DefaultNodeCredentialGrace - commands.LivenessSweepEvery)
	_, _, err = f.s.NodeSessions().AuthenticateNodeCredential(f.ctx, old.Token)
	require.NoError(t, err)
	next, err := commandstest.ExpireCredentials(f.ctx, f.s, "n1")
	require.NoError(t, err)
	require.Equal(t, commands.LivenessSweepEvery, next, "runs again when the grace ends")
	require.True(t, f.session("n1").Connected)

	// After it, the old one fails and its session is closed.
	f.advance(commands.LivenessSweepEvery)
	f.requireUnauthenticated(old.Token)
	_, _, err = f.s.NodeSessions().AuthenticateNodeCredential(f.ctx, fresh.Token)
	require.NoError(t, err)
	require.False(t, f.credentials("n1")[old.ID].Active)
	next, err = commandstest.ExpireCredentials(f.ctx, f.s, "n1")
	require.NoError(t, err)
	require.Zero(t, next)
	sess := f.session("n1")
	require.False(t, sess.Connected)
	require.Equal(t, "revoked", *sess.CloseReason)
	f.requireState("n1", core.NodeDisconnected)

	// The daemon comes back with the new credential; a later grace run
	// leaves that session alone.
	_, err = f.s.NodeSessions().OpenNodeSession(f.ctx, commands.OpenNodeSession{NodeID: "n1", Gateway: f.gateways["gw1"], GatewayID: "gw1",
		JournalID: "j1", CredentialID: fresh.ID})
	require.NoError(t, err)
	_, err = commandstest.ExpireCredentials(f.ctx, f.s, "n1")
	require.NoError(t, err)
	require.True(t, f.session("n1").Connected)
	f.requireInvariants()
}

// The grace is configurable; none revokes at the re-join, closing the
// session of the old credential at once.
func TestRejoinWithoutGrace(t *testing.T) {
	t.Parallel()
	f := setup(t)
	*f.s = *commands.New(f.d.Pool, commands.Config{NodeCredentialGrace: -1})
	old := f.join("n1", "metal")
	f.gateway("gw1")
	_, err := f.s.NodeSessions().OpenNodeSession(f.ctx, commands.OpenNodeSession{NodeID: "n1", Gateway: f.gateways["gw1"], GatewayID: "gw1",
		JournalID: "j1", CredentialID: old.ID})
	require.NoError(t, err)
	_, err = f.s.JoinNode(f.ctx, operator, "n1")
	require.NoError(t, err)
	f.requireUnauthenticated(old.Token)
	require.False(t, f.session("n1").Connected)
	f.requireState("n1", core.NodeDisconnected)

	*f.s = *commands.New(f.d.Pool, commands.Config{NodeCredentialGrace: time.Minute})
	older, err := f.s.JoinNode(f.ctx, operator, "n1")
	require.NoError(t, err)
	_, err = f.s.JoinNode(f.ctx, operator, "n1")
	require.NoError(t, err)
	require.WithinDuration(t, f.d.Now(t).Add(time.Minute), *f.credentials("n1")[older.ID].GraceUntil, 0)
}

// Retiring a node ends the grace of its superseded credentials too.
func TestRetireEndsTheGrace(t *testing.T) {
	t.Parallel()
	f := setup(t)
	old := f.join("n1", "metal")
	_, err := f.s.JoinNode(f.ctx, operator, "n1")
	require.NoError(t, err)
	_, _, err = f.s.NodeSessions().AuthenticateNodeCredential(f.ctx, old.Token)
	require.NoError(t, err)
	_, err = f.h.RetireNode(f.ctx, operator, commands.RetireNode{NodeID: "n1"})
	require.NoError(t, err)
	f.requireUnauthenticated(old.Token)
	for _, c := range f.credentials("n1") {
		require.False(t, c.Active)
	}
}

// Join tokens: operator-only, one join of one node, within their TTL.
func TestJoinTokens(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, err := f.s.CreateJoinToken(f.ctx, tenant, "n1", 0)
	require.Equal(t, core.CodePermissionDenied, core.CodeOf(err), "a member cannot issue join tokens")
	_, err = f.s.CreateJoinToken(f.ctx, operator, "n1", commands.MaxJoinTokenTTL+time.Second)
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err))

	jt, err := f.s.CreateJoinToken(f.ctx, operator, "n1", 0)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(jt.Token, "bcj_"))
	require.WithinDuration(t, f.d.Now(t).Add(commands.DefaultJoinTokenTTL), jt.ExpiresAt, 0)
	actor, err := f.s.CheckJoinToken(f.ctx, jt.Token, "n1")
	require.NoError(t, err)
	require.Equal(t, jt.ID, actor.TokenID)

	f.join("n1", "metal") // registers n1 (and joins it as an operator)
	_, err = f.s.JoinNodeWithToken(f.ctx, jt.Token, "n2")
	requireInvalidJoinToken(t, err, "another node")
	cred, err := f.s.JoinNodeWithToken(f.ctx, jt.Token, "n1")
	require.NoError(t, err)
	_, _, err = f.s.NodeSessions().AuthenticateNodeCredential(f.ctx, cred.Token)
	require.NoError(t, err)
	_, err = f.s.JoinNodeWithToken(f.ctx, jt.Token, "n1")
	requireInvalidJoinToken(t, err, "second use")
	_, err = f.s.CheckJoinToken(f.ctx, jt.Token, "n1")
	requireInvalidJoinToken(t, err, "second use")

	short, err := f.s.CreateJoinToken(f.ctx, operator, "n1", time.Minute)
	require.NoError(t, err)
	f.advance(time.Minute)
	_, err = f.s.JoinNodeWithToken(f.ctx, short.Token, "n1")
	requireInvalidJoinToken(t, err, "expired")

	_, err = f.h.RetireNode(f.ctx, operator, commands.RetireNode{NodeID: "n1"})
	require.NoError(t, err)
	_, err = f.s.CreateJoinToken(f.ctx, operator, "n1", 0)
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "a retired node gets no join token")
}

func requireInvalidJoinToken(t *testing.T, err error, why string) {
	t.Helper()
	require.Equal(t, core.CodeUnauthenticated, core.CodeOf(err), "%s: %v", why, err)
	require.Contains(t, err.Error(), "invalid join token", why)
}
