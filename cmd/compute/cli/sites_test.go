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

// `compute sites update` sends PATCH /v1/sites/{id} with the new name, a
// fresh Idempotency-Key (or the one given) and --if-match as If-Match, and
// prints the site it gets back; an error answer exits with its kind.
func TestSitesUpdateSendsThePatch(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, path, ifMatch, key string
		body                       map[string]any
	}
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, r.Header.Get("If-Match"), r.Header.Get("Idempotency-Key"), body})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v1/sites/fra1" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"code":"NOT_FOUND","message":"site nowhere not found"}}`)
			return
		}
		fmt.Fprintf(w, `{"id":"fra1","name":%q,"version":2,"position":"00000000000000010000000000000002"}`, body["name"])
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_test")

	out, errOut, code := inv.run("sites", "update", "fra1", "--name", "Frankfurt Main", "--if-match", "1", "-o", "json")
	require.Zero(t, code, errOut)
	require.Contains(t, out, `"Frankfurt Main"`)
	out, errOut, code = inv.run("sites", "update", "fra1", "--name", "FRA", "--idempotency-key", "k1")
	require.Zero(t, code, errOut)
	require.Contains(t, out, "FRA")
	_, errOut, code = inv.run("sites", "update", "nowhere", "--name", "x")
	require.Equal(t, exitNotFound, code, errOut)
	require.Contains(t, errOut, "not found")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 3)
	for _, s := range got {
		require.Equal(t, http.MethodPatch, s.method)
	}
	require.Equal(t, "/v1/sites/fra1", got[0].path)
	require.Equal(t, map[string]any{"name": "Frankfurt Main"}, got[0].body)
	require.Equal(t, "1", got[0].ifMatch)
	require.Regexp(t, `^cli-[0-9a-f]{24}$`, got[0].key)
	require.Empty(t, got[1].ifMatch)
	require.Equal(t, "k1", got[1].key)
	require.Equal(t, "/v1/sites/nowhere", got[2].path)

	// --name is required and checked before any request.
	_, errOut, code = inv.run("sites", "update", "fra1")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "name")
	require.Len(t, got, 3)
}
