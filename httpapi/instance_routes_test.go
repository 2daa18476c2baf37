package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// instanceJSON is an instance as the API returns it.
type instanceJSON struct {
	ID            string `json:"id"`
	ReservationID string `json:"reservationId"`
	NodeID        string `json:"nodeId"`
	State         string `json:"state"`
	Version       int64  `json:"version"`
	Position      string `json:"position"`
}

// Without a daemon the instance only moves as far as the API takes it:
// requested, then stopping. The daemon's part is TestInstanceLifecycle in
// package agent.
func TestInstanceOverHTTP(t *testing.T) {
	t.Parallel()
	f, node, rsv := setupCommands(t)
	_, globex := f.tokenFor(t, "globex", "hank@globex", core.RoleMember)
	body := map[string]any{"reservationId": rsv, "image": "pytorch:2"}
	key := map[string]string{"Idempotency-Key": "ins-1"}

	var created, again, got, deleted instanceJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/instances", f.member, body, key).decode(t, &created)
	require.Regexp(t, `^ins_`, created.ID)
	require.Equal(t, "requested", created.State)
	require.Equal(t, node, created.NodeID)
	require.Regexp(t, positionPattern, created.Position)
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/instances", f.member, body, key).decode(t, &again)
	require.Equal(t, created.ID, again.ID)

	f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodPost, "/v1/instances", globex, body, nil)
	f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodGet, "/v1/instances/"+created.ID, globex, nil, nil)
	f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodDelete, "/v1/instances/"+created.ID, globex, nil, nil)

	f.ok(t, http.StatusOK, http.MethodGet, "/v1/instances/"+created.ID, f.member, nil, nil).decode(t, &got)
	require.Equal(t, rsv, got.ReservationID)
	f.ok(t, http.StatusAccepted, http.MethodDelete, "/v1/instances/"+created.ID, f.member, nil, nil).decode(t, &deleted)
	require.Equal(t, "stopping", deleted.State)
	require.Equal(t, int64(2), deleted.Version)
	f.ok(t, http.StatusAccepted, http.MethodDelete, "/v1/instances/"+created.ID, f.member, nil, nil).decode(t, &deleted)
	require.Equal(t, int64(2), deleted.Version, "a repeated delete changes nothing")
}
