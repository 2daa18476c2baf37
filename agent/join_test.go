package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// A refused join says the server's answer once, after one "join": the
// daemon's error read "agent: join: join: 404 Not Found: …".
func TestJoinRefusalSaysJoinOnce(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":{"code":"NOT_FOUND","message":"pool p9 not found"}}`, http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	cfg := Config{NodeID: "n1", StateDir: t.TempDir(), ServerURL: srv.URL, JoinToken: "bc_join"}
	_, err := credential(context.Background(), cfg, nil)
	require.Error(t, err)
	require.Regexp(t, `^join: 404 Not Found: \{"error"`, err.Error())
}
