package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/wire"
)

// refusal dials the gateway at url with token and returns the status and
// body of its answer, which must not be a session.
func (f *fixture) refusal(url, token string) (int, string) {
	f.t.Helper()
	ws, resp, err := websocket.Dial(f.ctx, url, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": []string{"Bearer " + token}}})
	if ws != nil {
		_ = ws.CloseNow()
	}
	require.Error(f.t, err)
	require.NotNil(f.t, resp, "no HTTP answer: %v", err)
	body, err := io.ReadAll(resp.Body) // the first 1 KiB, which websocket.Dial kept
	require.NoError(f.t, err)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// A refused credential is 401 whatever the reason, and the body says
// whether the node is retired: its daemon is then told that no join token
// will let it in again. A revoked credential of a live node, and a secret
// that was never issued, read the same.
func TestGatewayTellsARetiredNodesDaemon(t *testing.T) {
	t.Parallel()
	f := setup(t)
	_, url := f.liveGateway("gw1")
	live := f.join("n1", "metal")
	revoked := f.join("n2", "metal")
	retired := f.join("n3", "metal")
	require.NoError(t, f.s.RevokeNodeCredential(f.ctx, operator, "n2", revoked.ID))
	_, err := f.h.RetireNode(f.ctx, operator, commands.RetireNode{NodeID: "n3"})
	require.NoError(t, err)

	f.connect(url, live.Token)
	for _, c := range []struct{ name, token, body string }{
		{"revoked", revoked.Token, wire.RefusedCredential},
		{"never issued", "bcn_" + strings.Repeat("x", 43), wire.RefusedCredential},
		{"retired", retired.Token, wire.RefusedNodeRetired},
	} {
		status, body := f.refusal(url, c.token)
		require.Equal(t, http.StatusUnauthorized, status, c.name)
		require.Equal(t, c.body, body, c.name)
	}
	_, _, err = f.s.NodeSessions().AuthenticateNodeCredential(f.ctx, retired.Token)
	require.ErrorIs(t, err, commands.ErrNodeRetired)
}
