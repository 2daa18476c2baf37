package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// `reservations extend --by` adds to the end it read, and only to the
// version it read: a change made in between (another extend) is a 409 to
// run again, not an extension shorter than asked. An --if-match given by
// hand wins.
func TestExtendByAppliesOnlyToTheVersionItRead(t *testing.T) {
	t.Parallel()
	const detail = `{"id":"rsv_1","tenant":"acme","state":"active","poolId":"p","nodeId":"n1","deviceIds":["GPU-1"],
		"start":"2030-01-01T00:00:00Z","end":"2030-01-01T02:00:00Z","tolerations":[],"version":4,"conditions":[],
		"createdAt":"2030-01-01T00:00:00Z","updatedAt":"2030-01-01T00:00:00Z","position":"00000000000000010000000000000001",
		"priorityClass":"batch","priority":0,"preemptible":false,"spec":{"gpu":{"count":1}},"charges":{},"allocation":null}`
	type sent struct {
		path, ifMatch string
		end           time.Time
	}
	var mu sync.Mutex
	var extends []sent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			fmt.Fprint(w, detail)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			End time.Time `json:"end"`
		}
		_ = json.Unmarshal(body, &req) // a body it cannot read shows as a zero end
		mu.Lock()
		extends = append(extends, sent{r.URL.Path, r.Header.Get("If-Match"), req.End})
		mu.Unlock()
		w.WriteHeader(http.StatusConflict)
		fmt.Fprint(w, `{"error":{"code":"CONFLICT","message":"reservation rsv_1 is at version 5, not 4"}}`)
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_test")

	_, errOut, code := inv.run("reservations", "extend", "rsv_1", "--by", "1h")
	require.NotZero(t, code)
	require.Contains(t, errOut, "CONFLICT")
	_, _, code = inv.run("reservations", "extend", "rsv_1", "--by", "30m", "--if-match", "9")
	require.NotZero(t, code)

	wantEnd := time.Date(2030, 1, 1, 3, 0, 0, 0, time.UTC)
	const path = "/v1/reservations/rsv_1/extend"
	require.Equal(t, []sent{{path, "4", wantEnd}, {path, "9", wantEnd.Add(-30 * time.Minute)}}, extends)
}
