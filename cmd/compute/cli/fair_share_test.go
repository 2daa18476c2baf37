package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The fair-share commands send what the API takes and show what it
// answers, and `reservations get` of a pending reservation shows its
// place in the waiting line and why it waits.
func TestFairShareCommands(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, path string
		body         map[string]any
	}
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, body})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/tenants/acme/fair-share" && r.Method == http.MethodPut:
			fmt.Fprint(w, `{"tenant":"acme","share":4,"version":2,"position":"00000000000000010000000000000003"}`)
		case r.URL.Path == "/v1/tenants/acme/fair-share":
			fmt.Fprint(w, `{"tenant":"acme","share":4,"version":2,"usageGpuHours":12.3456,"halfLifeHours":168,
				"asOf":"2030-01-01T00:00:00Z"}`)
		case r.URL.Path == "/v1/reservations/rsv_1":
			fmt.Fprint(w, `{"id":"rsv_1","tenant":"acme","state":"pending","poolId":"p","deviceIds":[],
				"start":"2030-01-01T00:00:00Z","end":"2030-01-01T02:00:00Z","tolerations":[],"conditions":[],"version":1,
				"createdAt":"2030-01-01T00:00:00Z","updatedAt":"2030-01-01T00:00:00Z","position":"00000000000000010000000000000001",
				"priorityClass":"standard","priority":0,"preemptible":false,"spec":{"gpu":{"count":1}},"charges":{},"allocation":null,
				"queue":{"scope":"pool:p","position":3,"queued":105,"tenantUsageGpuHours":8,"tenantShare":1,
				"asOf":"2030-01-01T00:00:30Z","reason":"n1: 0 free whole GPUs in the window, needs 1"}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"code":"NOT_FOUND","message":"not found"}}`)
		}
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_test")

	out, errOut, code := inv.run("fair-share", "set", "acme", "4")
	require.Zero(t, code, errOut)
	require.Regexp(t, `acme\s+4\s+2`, out)
	out, errOut, code = inv.run("fair-share", "get", "acme")
	require.Zero(t, code, errOut)
	require.Regexp(t, `acme\s+4\s+2\s+12\.346\s+168h`, out)
	out, errOut, code = inv.run("reservations", "get", "rsv_1")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "WAITING ON")
	require.Contains(t, out, "3/105 in pool:p")
	require.Contains(t, out, "n1: 0 free whole GPUs in the window, needs 1")

	mu.Lock()
	require.Len(t, got, 3)
	require.Equal(t, http.MethodPut, got[0].method)
	require.Equal(t, map[string]any{"share": float64(4)}, got[0].body)
	mu.Unlock()

	// A share that is not 1 to 1000000 is refused before any request.
	for _, bad := range []string{"0", "1000001", "x", "1.5"} {
		_, errOut, code = inv.run("fair-share", "set", "acme", bad)
		require.Equal(t, exitUsage, code, errOut)
		require.Contains(t, errOut, "SHARE")
	}
	_, errOut, code = inv.run("fair-share", "set", "acme")
	require.Equal(t, exitUsage, code, errOut)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 3)
}
