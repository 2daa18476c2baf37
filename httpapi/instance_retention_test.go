package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// An instance that ended more than COMPUTE_WORK_RETENTION ago is deleted
// by retention: GET and DELETE of its id are 404 NOT_FOUND, as for an id
// that never existed, and the reservation's list no longer has it; a
// cursor handed out before goes on with the instances after it.
func TestPrunedInstanceIsNotFound(t *testing.T) {
	t.Parallel()
	f, _, rsv := setupCommands(t)
	var ids []string
	for range 3 {
		var in instanceJSON
		f.ok(t, http.StatusCreated, http.MethodPost, "/v1/instances", f.member,
			map[string]any{"reservationId": rsv}, nil).decode(t, &in)
		ids = append(ids, in.ID)
	}
	var first struct {
		Items      []instanceJSON `json:"items"`
		NextCursor string         `json:"nextCursor"`
	}
	f.ok(t, http.StatusOK, http.MethodGet, "/v1/instances?limit=1&reservationId="+rsv, f.member, nil, nil).decode(t, &first)
	require.Equal(t, ids[0], first.Items[0].ID)
	// The first two end as if their daemon had reported their starts
	// failed; the third never started and stays requested.
	ctx := context.Background()
	_, err := f.pg.Pool.Exec(ctx, `UPDATE node_commands SET state = 'failed', finished_at = compute_now()
		WHERE instance_id = ANY($1)`, ids[:2])
	require.NoError(t, err)
	_, err = f.pg.Pool.Exec(ctx, `UPDATE instances SET state = 'failed', version = version + 1, updated_at = compute_now()
		WHERE id = ANY($1)`, ids[:2])
	require.NoError(t, err)

	f.pg.AdvanceSimClock(t, 7*24*time.Hour+time.Second)
	res, err := (&commands.Pruner{Pool: f.pg.Pool, Retention: commands.DefaultRetention()}).Prune(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, int64(2), res.Instances)

	for _, id := range ids[:2] {
		f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodGet, "/v1/instances/"+id, f.member, nil, nil)
		f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodDelete, "/v1/instances/"+id, f.member, nil, nil)
	}
	var got instanceJSON
	f.ok(t, http.StatusOK, http.MethodGet, "/v1/instances/"+ids[2], f.member, nil, nil).decode(t, &got)
	require.Equal(t, "requested", got.State, "an instance that has not ended stays")

	var page struct {
		Items      []instanceJSON `json:"items"`
		NextCursor string         `json:"nextCursor"`
	}
	f.ok(t, http.StatusOK, http.MethodGet, "/v1/instances?reservationId="+rsv, f.member, nil, nil).decode(t, &page)
	require.Len(t, page.Items, 1)
	require.Equal(t, ids[2], page.Items[0].ID)
	f.ok(t, http.StatusOK, http.MethodGet, "/v1/instances?limit=1&reservationId="+rsv+"&cursor="+first.NextCursor,
		f.member, nil, nil).decode(t, &page)
	require.Len(t, page.Items, 1, "the cursor after a pruned instance goes on")
	require.Equal(t, ids[2], page.Items[0].ID)
	require.Empty(t, page.NextCursor)
}
