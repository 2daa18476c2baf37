package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The examples of `reservations create --help` ask for windows a server
// with the default limits books: one ended on 2030-01-02 from --start now,
// a window of years, which the server refuses (a reservation is at most
// COMPUTE_MAX_RESERVATION_LENGTH long, 90 days by default).
func TestReservationsCreateExamplesAskForBookableWindows(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var windows [][2]time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Start, End time.Time }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"code":"INVALID_ARGUMENT","message":"not JSON"}}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		windows = append(windows, [2]time.Time{req.Start, req.End})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"rsv_1","tenant":"acme","state":"booked","poolId":"p","start":"2030-01-01T00:00:00Z",` +
			`"end":"2030-01-01T01:00:00Z","version":1,"priorityClass":"standard","position":"00000000000000010000000000000001"}`))
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_test")
	help, errOut, code := inv.run("reservations", "create", "--help")
	require.Zero(t, code, errOut)
	_, examples, ok := strings.Cut(help, "Examples:\n")
	require.True(t, ok, help)
	examples, _, _ = strings.Cut(examples, "\n\n")
	n := 0
	for _, line := range strings.Split(examples, "\n") {
		args := strings.Fields(line)
		require.Equal(t, []string{"compute", "reservations", "create"}, args[:3], line)
		_, errOut, code := inv.run(args[1:]...)
		require.Zero(t, code, "%s: %s", line, errOut)
		n++
	}
	require.NotZero(t, n)
	now := time.Now()
	for _, w := range windows {
		require.LessOrEqual(t, w[1].Sub(w[0]), 2160*time.Hour, "at most 90 days long: %v", w)
		require.True(t, w[1].After(now), "ends in the future: %v", w)
		require.LessOrEqual(t, w[0].Sub(now), 8784*time.Hour, "starts within the booking horizon: %v", w)
	}
}
