package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The priority-classes commands and the reservation's class flags send
// what the API takes: the class to create, the whole allow-list ([] for
// --none), and priorityClass with preemptible false for --no-preempt.
func TestPriorityClassCommandsSendTheirRequests(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, path, key string
		body              map[string]any
	}
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), body})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/priority-classes":
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, `{"name":"batch","value":-100,"preemptible":true,"graceSeconds":60,"description":"",
				"isDefault":false,"version":1,"createdAt":"2030-01-01T00:00:00Z","position":"00000000000000010000000000000002"}`)
		case "/v1/tenants/acme/priority-classes":
			fmt.Fprint(w, `{"tenant":"acme","classes":["batch"],"defaultClass":"standard","allowed":["batch","standard"],
				"version":1,"position":"00000000000000010000000000000003"}`)
		case "/v1/reservations":
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"error":{"code":"PERMISSION_DENIED","message":"tenant acme may not use priority class vip"}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"code":"NOT_FOUND","message":"not found"}}`)
		}
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_test")

	out, errOut, code := inv.run("priority-classes", "create", "batch", "--value", "-100", "--preemptible", "--grace-seconds", "60")
	require.Zero(t, code, errOut)
	// A class without a description shows "-" there, as every empty cell
	// does, not an empty cell that reads as a column short.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	require.Equal(t, []string{"batch", "-100", "true", "60s", "false", "-"}, strings.Fields(lines[1]))
	out, errOut, code = inv.run("priority-classes", "set-allowed", "acme", "batch")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "batch,standard")
	_, errOut, code = inv.run("priority-classes", "set-allowed", "acme", "--none")
	require.Zero(t, code, errOut)
	_, errOut, code = inv.run("reservations", "create", "--pool", "p", "--gpus", "1", "--start", "now", "--duration", "1h",
		"--priority-class", "vip", "--no-preempt")
	require.Equal(t, exitDenied, code, errOut)
	require.Contains(t, errOut, "may not use priority class vip")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 4)
	require.Equal(t, http.MethodPost, got[0].method)
	require.Equal(t, map[string]any{"name": "batch", "value": float64(-100), "preemptible": true, "graceSeconds": float64(60)}, got[0].body)
	require.Regexp(t, `^cli-[0-9a-f]{24}$`, got[0].key)
	require.Equal(t, http.MethodPut, got[1].method)
	require.Equal(t, map[string]any{"classes": []any{"batch"}}, got[1].body)
	require.Equal(t, map[string]any{"classes": []any{}}, got[2].body)
	require.Equal(t, "vip", got[3].body["priorityClass"])
	require.Equal(t, false, got[3].body["preemptible"])

	// Bad usage is refused before any request.
	_, errOut, code = inv.run("priority-classes", "set-allowed", "acme")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "--none")
	_, errOut, code = inv.run("priority-classes", "set-allowed", "acme", "batch", "--none")
	require.Equal(t, exitUsage, code, errOut)
	_, errOut, code = inv.run("priority-classes", "create", "batch")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "value")
	require.Len(t, got, 4)
}
