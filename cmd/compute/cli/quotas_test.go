package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// `quotas set` sends one request per RESOURCE=MAX, in order. When the
// server refuses one (a max below the tenant's usage), the ones before it
// are set already and the ones after it are never sent: the command says
// which, besides the server's error, and exits as the error does.
func TestQuotasSetSaysWhatWasSetBeforeARefusal(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var sent []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res := strings.TrimPrefix(r.URL.Path, "/v1/tenants/acme/quotas/")
		mu.Lock()
		sent = append(sent, res)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if res == "gpu" {
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error":{"code":"CONFLICT","message":"tenant acme uses 9 gpu; release reservations before lowering its quota to 2"}}`)
			return
		}
		fmt.Fprintf(w, `{"tenant":"acme","resource":%q,"used":0,"max":300,"version":2,"position":"00000000000000010000000000000003"}`, res)
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_test")

	out, errOut, code := inv.run("quotas", "set", "acme", "vcpu=300", "gpu=2", "memory=5")
	require.Equal(t, exitConflict, code, errOut)
	require.Empty(t, out)
	require.Contains(t, errOut, "set before gpu=2 was refused: vcpu=300")
	require.Contains(t, errOut, "not sent: memory=5")
	require.Contains(t, errOut, "release reservations before lowering its quota to 2 (CONFLICT, HTTP 409)")
	mu.Lock()
	require.Equal(t, []string{"vcpu", "gpu"}, sent)
	mu.Unlock()

	// The first refused: nothing was set, nothing to report but the error.
	_, errOut, code = inv.run("quotas", "set", "acme", "gpu=2")
	require.Equal(t, exitConflict, code, errOut)
	require.NotContains(t, errOut, "set before")
	require.NotContains(t, errOut, "not sent")
}

// `quotas set --if-match VERSION` sends If-Match with its one RESOURCE=MAX,
// and refuses several (one version cannot be each quota's); the quota's
// VERSION is shown, as every object an --if-match change takes shows its.
// A model quota's key is sent as the GPUs name the model, spaces included.
func TestQuotasSetIfMatch(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res := strings.TrimPrefix(r.URL.Path, "/v1/tenants/acme/quotas/")
		mu.Lock()
		got = append(got, res+" If-Match:"+r.Header.Get("If-Match"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("If-Match") == "2" {
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error":{"code":"CONFLICT","message":"quota gpu of tenant acme is at version 3, not 2"}}`)
			return
		}
		fmt.Fprintf(w, `{"tenant":"acme","resource":%q,"used":0,"max":24,"version":4,"position":"00000000000000010000000000000003"}`, res)
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_test")

	out, errOut, code := inv.run("quotas", "set", "acme", "gpu=24", "--if-match", "3")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	require.Equal(t, []string{"TENANT", "RESOURCE", "MAX", "USED", "VERSION"}, strings.Fields(lines[0]))
	require.Equal(t, []string{"acme", "gpu", "24", "0", "4"}, strings.Fields(lines[1]))

	_, errOut, code = inv.run("quotas", "set", "acme", "gpu=24", "--if-match", "2")
	require.Equal(t, exitConflict, code, errOut)
	require.Contains(t, errOut, "at version 3, not 2")

	_, errOut, code = inv.run("quotas", "set", "acme", "gpu=24", "vcpu=8", "--if-match", "3")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "--if-match")

	_, errOut, code = inv.run("quotas", "set", "acme", "gpu:NVIDIA H100 80GB HBM3=8")
	require.Equal(t, 0, code, errOut)
	_, errOut, code = inv.run("quotas", "set", "acme", "gpu:=8")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "gpu:<model>")

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"gpu If-Match:3", "gpu If-Match:2", "gpu:NVIDIA H100 80GB HBM3 If-Match:"}, got)
}
