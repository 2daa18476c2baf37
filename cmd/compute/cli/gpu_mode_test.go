package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// An operator switches a GPU between whole, MIG, time-slice and MPS with
// nodes set-mode: the command sends the layout PUT /v1/gpus/{id}/mode
// takes, with --if-match as If-Match, and shows the GPU it answers with.
// Before it existed, the only way was curl and the layout's JSON.
func TestNodesSetModeSendsTheLayout(t *testing.T) {
	t.Parallel()
	type sent struct {
		path, ifMatch string
		layout        map[string]any
	}
	var mu sync.Mutex
	var got []sent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var layout map[string]any
		if err := json.Unmarshal(b, &layout); err != nil || r.Method != http.MethodPut {
			http.Error(w, `{"error":{"code":"INVALID_ARGUMENT","message":"no"}}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, sent{r.URL.Path, r.Header.Get("If-Match"), layout})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		mode, _ := layout["mode"].(string)
		_, _ = w.Write([]byte(`{"id":"GPU-0","mode":"` + mode + `","health":"healthy","quarantined":false,"version":3,"position":"00"}`))
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_operator")

	for _, c := range []struct {
		args    []string
		ifMatch string
		layout  map[string]any
	}{
		{[]string{"nodes", "set-mode", "GPU-0", "time-slice", "--slots", "4"}, "", map[string]any{"mode": "time-slice", "slots": 4.0}},
		{[]string{"nodes", "set-mode", "GPU-0", "mps", "--slots", "2", "--if-match", "2"}, "2", map[string]any{"mode": "mps", "slots": 2.0}},
		{[]string{"nodes", "set-mode", "GPU-0", "mig", "--mig", "3g.40gb, 1g.10gb"}, "",
			map[string]any{"mode": "mig", "mig": []any{"3g.40gb", "1g.10gb"}}},
		{[]string{"nodes", "set-mode", "GPU-0", "exclusive"}, "", map[string]any{"mode": "exclusive"}},
	} {
		mu.Lock()
		got = nil
		mu.Unlock()
		out, errOut, code := inv.run(c.args...)
		require.Zero(t, code, "%v: %s", c.args, errOut)
		mu.Lock()
		require.Equal(t, []sent{{"/v1/gpus/GPU-0/mode", c.ifMatch, c.layout}}, got, c.args)
		mu.Unlock()
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2, out)
		require.Equal(t, []string{"ID", "MODE", "HEALTH", "QUARANTINED", "VERSION"}, strings.Fields(lines[0]))
		require.Equal(t, []string{"GPU-0", c.layout["mode"].(string), "healthy", "no", "3"}, strings.Fields(lines[1]))
	}
}
