package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

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

// A booking whose window has not begun takes no workload: POST
// /v1/instances and POST /v1/commands on it are 409 CONFLICT saying when it
// starts and to try again once it is active, and write nothing.
func TestWorkloadOnBookedReservationIsConflict(t *testing.T) {
	t.Parallel()
	f, active, _ := setupCommands(t)
	start, end := f.window(t, time.Hour, 3*time.Hour)
	var later reservationJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, map[string]any{"poolId": "fra1-gpu",
		"gpus": 1, "vcpu": 8, "memoryMb": 16384, "start": start, "end": end}, nil).decode(t, &later)
	require.Equal(t, "booked", later.State)
	require.NotEqual(t, active, later.NodeID)
	before := f.countOutbox(t)

	e := f.fails(t, http.StatusConflict, core.CodeConflict, http.MethodPost, "/v1/instances", f.member,
		map[string]any{"reservationId": later.ID}, map[string]string{"Idempotency-Key": "ins-later"})
	require.Equal(t, fmt.Sprintf("reservation %s is booked, starting at %s; instances run only while it is active: "+
		"try again once it is (within seconds of its start)", later.ID, later.Start.UTC().Format(time.RFC3339)), e.Message)
	e = f.fails(t, http.StatusConflict, core.CodeConflict, http.MethodPost, "/v1/commands", f.member,
		map[string]any{"nodeId": later.NodeID, "kind": "exec", "payload": map[string]any{"script": "true"}},
		map[string]string{"Idempotency-Key": "cmd-later"})
	require.Contains(t, e.Message, "reservation "+later.ID+" is booked, starting at")

	var instances, jobs int
	require.NoError(t, f.pg.Pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM instances),
		(SELECT count(*) FROM node_commands WHERE kind = 'exec')`).Scan(&instances, &jobs))
	require.Zero(t, instances)
	require.Zero(t, jobs)
	require.Equal(t, before, f.countOutbox(t), "no event")
}

// An image that is no image reference is refused, and nothing is written.
// (Scripts too long for sh -c are refused by the command, with a body
// larger than this fixture's limit: commands/TestCreateInstanceRules.)
func TestInstanceImageIsAReference(t *testing.T) {
	t.Parallel()
	f, _, rsv := setupCommands(t)
	before := f.countOutbox(t)
	e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPost, "/v1/instances", f.member,
		map[string]any{"reservationId": rsv, "image": "../../etc"}, map[string]string{"Idempotency-Key": "ins-image"})
	require.Equal(t, `image "../../etc" is not an image reference such as registry.example.com/team/train:1.4`, e.Message)
	require.Equal(t, before, f.countOutbox(t), "nothing was written")
}

// GET /v1/instances?reservationId= pages through a reservation's
// instances, oldest first, with the cursor every list has; another
// tenant's reservation is 404, as a missing one is, and reservationId is
// required.
func TestListInstancesOfAReservation(t *testing.T) {
	t.Parallel()
	f, _, rsv := setupCommands(t)
	_, globex := f.tokenFor(t, "globex", "hank@globex", core.RoleMember)
	var want []string
	for i := range 5 {
		var in instanceJSON
		f.ok(t, http.StatusCreated, http.MethodPost, "/v1/instances", f.member,
			map[string]any{"reservationId": rsv, "command": fmt.Sprintf("exit %d", i)}, nil).decode(t, &in)
		want = append(want, in.ID)
	}

	var got []string
	path := "/v1/instances?limit=2&reservationId=" + rsv
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3, "five instances, two a page")
		var page struct {
			Items      []instanceJSON `json:"items"`
			NextCursor string         `json:"nextCursor"`
		}
		f.ok(t, http.StatusOK, http.MethodGet, path, f.member, nil, nil).decode(t, &page)
		for _, in := range page.Items {
			require.Equal(t, rsv, in.ReservationID)
			got = append(got, in.ID)
		}
		if page.NextCursor == "" {
			break
		}
		path = "/v1/instances?limit=2&reservationId=" + rsv + "&cursor=" + page.NextCursor
	}
	require.Equal(t, want, got, "every instance once, oldest first")

	f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodGet, "/v1/instances?reservationId="+rsv, globex, nil, nil)
	f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodGet, "/v1/instances?reservationId=rsv_nope", f.member, nil, nil)
	f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodGet, "/v1/instances", f.member, nil, nil)
	f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodGet,
		"/v1/instances?reservationId="+rsv+"&cursor=bm90LWEtY3Vyc29y", f.member, nil, nil)
}
